# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract: kubernetes.core 6.2 modules (k8s, k8s_info, k8s_drain) against the lab."""

from __future__ import annotations

import textwrap


PLAYBOOK = textwrap.dedent("""\
    - hosts: localhost
      gather_facts: false
      module_defaults:
        group/kubernetes.core.k8s:
          kubeconfig: "{{ lookup('ansible.builtin.env', 'KUBECONFIG') }}"
      vars:
        cm:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: ansible-cm, namespace: default, labels: {app: web, tier: front}}
          data: {mode: one}
      tasks:
        - name: Create in check mode
          kubernetes.core.k8s: {state: present, definition: "{{ cm }}"}
          check_mode: true
          register: checked
        - name: Nothing was created by check mode
          kubernetes.core.k8s_info: {kind: ConfigMap, namespace: default, name: ansible-cm}
          register: after_check
        - name: Create
          kubernetes.core.k8s: {state: present, definition: "{{ cm }}"}
          register: created
        - name: Create again
          kubernetes.core.k8s: {state: present, definition: "{{ cm }}"}
          register: again
        - ansible.builtin.assert:
            that:
              - checked is changed
              - after_check.resources | length == 0
              - created is changed
              - again is not changed
              - again.result.metadata.resourceVersion == created.result.metadata.resourceVersion

        - name: Apply create
          kubernetes.core.k8s:
            apply: true
            definition: "{{ cm | combine({'metadata': {'name': 'applied', 'namespace': 'default'}}) }}"
          register: apply1
        - name: Apply change
          kubernetes.core.k8s:
            apply: true
            definition: "{{ cm | combine({'metadata': {'name': 'applied', 'namespace': 'default'}, 'data': {'mode': 'two'}}) }}"
          register: apply2
        - name: Apply unchanged
          kubernetes.core.k8s:
            apply: true
            definition: "{{ cm | combine({'metadata': {'name': 'applied', 'namespace': 'default'}, 'data': {'mode': 'two'}}) }}"
          register: apply3
        - ansible.builtin.assert:
            that:
              - apply1 is changed
              - apply2 is changed and apply2.result.data.mode == 'two'
              - apply3 is not changed

        - name: Server-side apply
          kubernetes.core.k8s:
            apply: true
            definition: "{{ cm | combine({'metadata': {'name': 'ssa', 'namespace': 'default'}}) }}"
            server_side_apply: {field_manager: ansible, force_conflicts: true}
          register: ssa
        - ansible.builtin.assert:
            that:
              - ssa is changed

        - name: Pods for the selectors
          kubernetes.core.k8s:
            definition:
              apiVersion: v1
              kind: Pod
              metadata: {name: "{{ item.name }}", namespace: default, labels: {app: web, tier: "{{ item.tier }}"}}
              spec:
                nodeName: "{{ item.node }}"
                containers: [{name: c, image: busybox:1.36}]
          loop:
            - {name: p-front, tier: front, node: worker-1}
            - {name: p-back, tier: back, node: worker-2}
            - {name: p-db, tier: db, node: worker-2}
        - name: Wait until they run
          kubernetes.core.k8s_info:
            kind: Pod
            namespace: default
            label_selectors: ["app=web"]
            field_selectors: ["status.phase=Running"]
          register: running
          until: running.resources | length == 3
          retries: 60
          delay: 0.5
        - name: Label and field selectors in one query
          kubernetes.core.k8s_info:
            kind: Pod
            label_selectors: ["app=web", "tier in (front, back)"]
            field_selectors: ["spec.nodeName=worker-2", "status.phase=Running"]
          register: selected
        - ansible.builtin.assert:
            that:
              - selected.resources | map(attribute='metadata.name') | list == ['p-back']

        - name: Drain worker-2 (unmanaged pods need force)
          kubernetes.core.k8s_drain:
            name: worker-2
            state: drain
            delete_options: {force: true, ignore_daemonsets: true, terminate_grace_period: 0, wait_timeout: 60}
          register: drained
        - name: Pods left on worker-2
          kubernetes.core.k8s_info:
            kind: Pod
            namespace: default
            field_selectors: ["spec.nodeName=worker-2"]
          register: left
        - name: The node
          kubernetes.core.k8s_info: {kind: Node, name: worker-2}
          register: node
        - ansible.builtin.assert:
            that:
              - drained is changed
              - left.resources | selectattr('metadata.name', 'in', ['p-back', 'p-db']) | list | length == 0
              - node.resources[0].spec.unschedulable
        - name: Uncordon
          kubernetes.core.k8s_drain: {name: worker-2, state: uncordon}
        - name: The node again
          kubernetes.core.k8s_info: {kind: Node, name: worker-2}
          register: node
        - ansible.builtin.assert:
            that:
              - not (node.resources[0].spec.unschedulable | default(false))
    """)


def test_kubernetes_core_modules(lab, tmp_path):
    proc = lab.run_playbook(PLAYBOOK, tmp_path, "contract.yml", timeout=600)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert "failed=0" in proc.stdout
    # kubernetes.core drops managedFields from its results: read them with the Python client.
    from kubernetes import client, config
    core = client.CoreV1Api(config.new_client_from_config(config_file=lab.kubeconfig))
    managed = core.read_namespaced_config_map("ssa", "default").metadata.managed_fields
    assert [(m.manager, m.operation) for m in managed] == [("ansible", "Apply")]
