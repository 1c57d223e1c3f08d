# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The message schemas that ``kubelab.protobuf`` decodes with: one per k8s.io/api type.

Each schema maps a field number to ``(JSON name, kind, mode, nested schema)``. The field numbers
and the ``omitempty``-ness behind each mode are the ``protobuf:"..."``/``json:"..."`` struct tags
compiled into the recording clients (``strings libhelm_c.so``; k8s.io/api v0.35), checked against
k8s.io/api's ``generated.proto``.

kinds:
    ``string``, ``bytes`` (base64), ``int`` (int32/int64), ``bool``, ``message``, ``time``
    (metav1.Time, RFC 3339), ``fields_v1`` (raw JSON), ``map_string``, ``map_bytes``,
    ``map_quantity`` (map to resource.Quantity), ``strings`` (repeated string), ``messages``
    (repeated message), ``intstr`` (intstr.IntOrString: its JSON is the number or the string),
    ``quantity`` (resource.Quantity: its JSON is the string), ``inline`` (an embedded struct whose
    fields JSON flattens into the parent, such as LocalObjectReference in ConfigMapKeySelector).

modes, i.e. how a Go zero value shows in JSON:
    ``OMIT`` (False): an ``omitempty`` field; ``""``, ``0``, ``false``, empty maps and lists and the
        zero Time are dropped. Structs (``message``, ``intstr``) are never dropped by omitempty:
        an absent one reads as ``{}`` (``0`` for IntOrString).
    ``KEEP`` (True): a pointer field; kept whenever it is on the wire, even with a zero value.
    ``ALWAYS``: a field without ``omitempty``; kept even when zero, and Go's zero value stands in
        when it is absent (``null`` for a nil list or map, as Go writes it; ``"rules": null``).

Only what the clients send is decoded; fields missing from a schema are skipped on decoding.
Status messages are decoded only as far as a create needs (their scalar counters); conditions
and other status sub-messages are skipped.

PodSpec (in Deployment, Job and CronJob templates) decodes: ``containers`` and
``initContainers``, ``restartPolicy``, ``terminationGracePeriodSeconds``,
``activeDeadlineSeconds``, ``dnsPolicy``, ``nodeSelector``, ``serviceAccountName``,
``serviceAccount``, ``automountServiceAccountToken``, ``nodeName``, ``hostNetwork``, ``hostPID``,
``hostIPC``, ``imagePullSecrets``, ``hostname``, ``subdomain``, ``schedulerName``,
``tolerations``, ``priorityClassName``, ``priority``, ``runtimeClassName`` and
``enableServiceLinks``. It skips ``volumes``, ``securityContext``, ``affinity``, ``hostAliases``,
``dnsConfig``, ``readinessGates``, ``overhead``, ``topologySpreadConstraints``, ``os``,
``schedulingGates``, ``resourceClaims``, ``resources`` and the rest.

Container decodes ``name``, ``image``, ``command``, ``args``, ``workingDir``, ``ports``, ``env``
(with ``valueFrom``), ``resources`` (limits, requests, claims), ``terminationMessagePath``,
``terminationMessagePolicy``, ``imagePullPolicy``, ``stdin``, ``stdinOnce``, ``tty`` and
``restartPolicy``. It skips ``envFrom``, ``volumeMounts``, ``volumeDevices``, the probes,
``lifecycle``, ``securityContext`` and ``resizePolicy``.
"""

from __future__ import annotations

OMIT = False
KEEP = True
ALWAYS = "always"

# ----------------------------------------------------------------------------------------------
# meta/v1

TIME = {1: ("seconds", "int", OMIT, None), 2: ("nanos", "int", OMIT, None)}

OWNER_REFERENCE = {
    5: ("apiVersion", "string", OMIT, None),
    1: ("kind", "string", OMIT, None),
    3: ("name", "string", OMIT, None),
    4: ("uid", "string", OMIT, None),
    6: ("controller", "bool", KEEP, None),
    7: ("blockOwnerDeletion", "bool", KEEP, None),
}

MANAGED_FIELDS_ENTRY = {
    1: ("manager", "string", OMIT, None),
    2: ("operation", "string", OMIT, None),
    3: ("apiVersion", "string", OMIT, None),
    4: ("time", "time", KEEP, None),
    6: ("fieldsType", "string", OMIT, None),
    7: ("fieldsV1", "fields_v1", KEEP, None),
    8: ("subresource", "string", OMIT, None),
}

OBJECT_META = {
    1: ("name", "string", OMIT, None),
    2: ("generateName", "string", OMIT, None),
    3: ("namespace", "string", OMIT, None),
    4: ("selfLink", "string", OMIT, None),
    5: ("uid", "string", OMIT, None),
    6: ("resourceVersion", "string", OMIT, None),
    7: ("generation", "int", OMIT, None),
    8: ("creationTimestamp", "time", OMIT, None),
    9: ("deletionTimestamp", "time", KEEP, None),
    10: ("deletionGracePeriodSeconds", "int", KEEP, None),
    11: ("labels", "map_string", OMIT, None),
    12: ("annotations", "map_string", OMIT, None),
    13: ("ownerReferences", "messages", OMIT, OWNER_REFERENCE),
    14: ("finalizers", "strings", OMIT, None),
    17: ("managedFields", "messages", OMIT, MANAGED_FIELDS_ENTRY),
}

LABEL_SELECTOR_REQUIREMENT = {
    1: ("key", "string", ALWAYS, None),
    2: ("operator", "string", ALWAYS, None),
    3: ("values", "strings", OMIT, None),
}

LABEL_SELECTOR = {
    1: ("matchLabels", "map_string", OMIT, None),
    2: ("matchExpressions", "messages", OMIT, LABEL_SELECTOR_REQUIREMENT),
}

PRECONDITIONS = {
    1: ("uid", "string", KEEP, None),
    2: ("resourceVersion", "string", KEEP, None),
}

DELETE_OPTIONS = {
    1: ("gracePeriodSeconds", "int", KEEP, None),
    2: ("preconditions", "message", KEEP, PRECONDITIONS),
    3: ("orphanDependents", "bool", KEEP, None),
    # Tagged "varint" in Go, but marshalled as a length-delimited string, as generated.proto says.
    4: ("propagationPolicy", "string", KEEP, None),
    5: ("dryRun", "strings", OMIT, None),
    6: ("ignoreStoreReadErrorWithClusterBreakingPotential", "bool", KEEP, None),
}

# resource.Quantity's own message; ``kubelab.protobuf`` turns it into the string.
QUANTITY = {1: ("string", "string", OMIT, None)}

# IntOrString's own message; ``kubelab.protobuf`` turns it into the number or the string.
INT_OR_STRING = {
    1: ("type", "int", OMIT, None),
    2: ("intVal", "int", OMIT, None),
    3: ("strVal", "string", OMIT, None),
}

# ----------------------------------------------------------------------------------------------
# core/v1

SECRET = {
    1: ("metadata", "message", OMIT, OBJECT_META),
    2: ("data", "map_bytes", OMIT, None),
    3: ("type", "string", OMIT, None),
    4: ("stringData", "map_string", OMIT, None),
    5: ("immutable", "bool", KEEP, None),
}

CONFIG_MAP = {
    1: ("metadata", "message", OMIT, OBJECT_META),
    2: ("data", "map_string", OMIT, None),
    3: ("binaryData", "map_bytes", OMIT, None),
    4: ("immutable", "bool", KEEP, None),
}

NAMESPACE = {
    1: ("metadata", "message", OMIT, OBJECT_META),
    2: ("spec", "message", OMIT, {1: ("finalizers", "strings", OMIT, None)}),
    3: ("status", "message", OMIT, {1: ("phase", "string", OMIT, None)}),
}

LOCAL_OBJECT_REFERENCE = {1: ("name", "string", OMIT, None)}

OBJECT_REFERENCE = {
    1: ("kind", "string", OMIT, None),
    2: ("namespace", "string", OMIT, None),
    3: ("name", "string", OMIT, None),
    4: ("uid", "string", OMIT, None),
    5: ("apiVersion", "string", OMIT, None),
    6: ("resourceVersion", "string", OMIT, None),
    7: ("fieldPath", "string", OMIT, None),
}

SERVICE_ACCOUNT = {
    1: ("metadata", "message", OMIT, OBJECT_META),
    2: ("secrets", "messages", OMIT, OBJECT_REFERENCE),
    3: ("imagePullSecrets", "messages", OMIT, LOCAL_OBJECT_REFERENCE),
    4: ("automountServiceAccountToken", "bool", KEEP, None),
}

SERVICE_PORT = {
    1: ("name", "string", OMIT, None),
    2: ("protocol", "string", OMIT, None),
    6: ("appProtocol", "string", KEEP, None),
    3: ("port", "int", ALWAYS, None),
    4: ("targetPort", "intstr", OMIT, None),
    5: ("nodePort", "int", OMIT, None),
}

SERVICE_SPEC = {
    1: ("ports", "messages", OMIT, SERVICE_PORT),
    2: ("selector", "map_string", OMIT, None),
    3: ("clusterIP", "string", OMIT, None),
    18: ("clusterIPs", "strings", OMIT, None),
    4: ("type", "string", OMIT, None),
    5: ("externalIPs", "strings", OMIT, None),
    7: ("sessionAffinity", "string", OMIT, None),
    8: ("loadBalancerIP", "string", OMIT, None),
    9: ("loadBalancerSourceRanges", "strings", OMIT, None),
    10: ("externalName", "string", OMIT, None),
    11: ("externalTrafficPolicy", "string", OMIT, None),
    12: ("healthCheckNodePort", "int", OMIT, None),
    13: ("publishNotReadyAddresses", "bool", OMIT, None),
    19: ("ipFamilies", "strings", OMIT, None),
    17: ("ipFamilyPolicy", "string", KEEP, None),
    20: ("allocateLoadBalancerNodePorts", "bool", KEEP, None),
    21: ("loadBalancerClass", "string", KEEP, None),
    22: ("internalTrafficPolicy", "string", KEEP, None),
    23: ("trafficDistribution", "string", KEEP, None),
}

LOAD_BALANCER_INGRESS = {
    1: ("ip", "string", OMIT, None),
    2: ("hostname", "string", OMIT, None),
    3: ("ipMode", "string", KEEP, None),
}

SERVICE = {
    1: ("metadata", "message", OMIT, OBJECT_META),
    2: ("spec", "message", OMIT, SERVICE_SPEC),
    3: ("status", "message", OMIT, {
        1: ("loadBalancer", "message", OMIT, {1: ("ingress", "messages", OMIT, LOAD_BALANCER_INGRESS)}),
    }),
}

CONTAINER_PORT = {
    1: ("name", "string", OMIT, None),
    2: ("hostPort", "int", OMIT, None),
    3: ("containerPort", "int", ALWAYS, None),
    4: ("protocol", "string", OMIT, None),
    5: ("hostIP", "string", OMIT, None),
}

KEY_SELECTOR = {  # ConfigMapKeySelector and SecretKeySelector
    1: ("", "inline", OMIT, LOCAL_OBJECT_REFERENCE),
    2: ("key", "string", ALWAYS, None),
    3: ("optional", "bool", KEEP, None),
}

ENV_VAR_SOURCE = {
    1: ("fieldRef", "message", KEEP, {
        1: ("apiVersion", "string", OMIT, None),
        2: ("fieldPath", "string", ALWAYS, None),
    }),
    2: ("resourceFieldRef", "message", KEEP, {
        1: ("containerName", "string", OMIT, None),
        2: ("resource", "string", ALWAYS, None),
        3: ("divisor", "quantity", KEEP, None),
    }),
    3: ("configMapKeyRef", "message", KEEP, KEY_SELECTOR),
    4: ("secretKeyRef", "message", KEEP, KEY_SELECTOR),
}

ENV_VAR = {
    1: ("name", "string", ALWAYS, None),
    2: ("value", "string", OMIT, None),
    3: ("valueFrom", "message", KEEP, ENV_VAR_SOURCE),
}

RESOURCE_REQUIREMENTS = {
    1: ("limits", "map_quantity", OMIT, None),
    2: ("requests", "map_quantity", OMIT, None),
    3: ("claims", "messages", OMIT, {1: ("name", "string", ALWAYS, None), 2: ("request", "string", OMIT, None)}),
}

CONTAINER = {
    1: ("name", "string", ALWAYS, None),
    2: ("image", "string", OMIT, None),
    3: ("command", "strings", OMIT, None),
    4: ("args", "strings", OMIT, None),
    5: ("workingDir", "string", OMIT, None),
    6: ("ports", "messages", OMIT, CONTAINER_PORT),
    7: ("env", "messages", OMIT, ENV_VAR),
    8: ("resources", "message", OMIT, RESOURCE_REQUIREMENTS),
    24: ("restartPolicy", "string", KEEP, None),
    13: ("terminationMessagePath", "string", OMIT, None),
    20: ("terminationMessagePolicy", "string", OMIT, None),
    14: ("imagePullPolicy", "string", OMIT, None),
    16: ("stdin", "bool", OMIT, None),
    17: ("stdinOnce", "bool", OMIT, None),
    18: ("tty", "bool", OMIT, None),
}

TOLERATION = {
    1: ("key", "string", OMIT, None),
    2: ("operator", "string", OMIT, None),
    3: ("value", "string", OMIT, None),
    4: ("effect", "string", OMIT, None),
    5: ("tolerationSeconds", "int", KEEP, None),
}

POD_SPEC = {
    20: ("initContainers", "messages", OMIT, CONTAINER),
    2: ("containers", "messages", ALWAYS, CONTAINER),
    3: ("restartPolicy", "string", OMIT, None),
    4: ("terminationGracePeriodSeconds", "int", KEEP, None),
    5: ("activeDeadlineSeconds", "int", KEEP, None),
    6: ("dnsPolicy", "string", OMIT, None),
    7: ("nodeSelector", "map_string", OMIT, None),
    8: ("serviceAccountName", "string", OMIT, None),
    9: ("serviceAccount", "string", OMIT, None),
    21: ("automountServiceAccountToken", "bool", KEEP, None),
    10: ("nodeName", "string", OMIT, None),
    11: ("hostNetwork", "bool", OMIT, None),
    12: ("hostPID", "bool", OMIT, None),
    13: ("hostIPC", "bool", OMIT, None),
    15: ("imagePullSecrets", "messages", OMIT, LOCAL_OBJECT_REFERENCE),
    16: ("hostname", "string", OMIT, None),
    17: ("subdomain", "string", OMIT, None),
    19: ("schedulerName", "string", OMIT, None),
    22: ("tolerations", "messages", OMIT, TOLERATION),
    24: ("priorityClassName", "string", OMIT, None),
    25: ("priority", "int", KEEP, None),
    29: ("runtimeClassName", "string", KEEP, None),
    30: ("enableServiceLinks", "bool", KEEP, None),
}

POD_TEMPLATE_SPEC = {
    1: ("metadata", "message", OMIT, OBJECT_META),
    2: ("spec", "message", OMIT, POD_SPEC),
}

# ----------------------------------------------------------------------------------------------
# policy/v1

EVICTION = {
    1: ("metadata", "message", OMIT, OBJECT_META),
    2: ("deleteOptions", "message", KEEP, DELETE_OPTIONS),
}

POD_DISRUPTION_BUDGET = {
    1: ("metadata", "message", OMIT, OBJECT_META),
    2: ("spec", "message", OMIT, {
        1: ("minAvailable", "intstr", KEEP, None),
        2: ("selector", "message", KEEP, LABEL_SELECTOR),
        3: ("maxUnavailable", "intstr", KEEP, None),
        4: ("unhealthyPodEvictionPolicy", "string", KEEP, None),
    }),
    3: ("status", "message", OMIT, {  # disruptedPods and conditions are skipped
        1: ("observedGeneration", "int", OMIT, None),
        3: ("disruptionsAllowed", "int", ALWAYS, None),
        4: ("currentHealthy", "int", ALWAYS, None),
        5: ("desiredHealthy", "int", ALWAYS, None),
        6: ("expectedPods", "int", ALWAYS, None),
    }),
}

# ----------------------------------------------------------------------------------------------
# apps/v1

DEPLOYMENT = {
    1: ("metadata", "message", OMIT, OBJECT_META),
    2: ("spec", "message", OMIT, {
        1: ("replicas", "int", KEEP, None),
        2: ("selector", "message", KEEP, LABEL_SELECTOR),
        3: ("template", "message", OMIT, POD_TEMPLATE_SPEC),
        4: ("strategy", "message", OMIT, {
            1: ("type", "string", OMIT, None),
            2: ("rollingUpdate", "message", KEEP, {
                1: ("maxUnavailable", "intstr", KEEP, None),
                2: ("maxSurge", "intstr", KEEP, None),
            }),
        }),
        5: ("minReadySeconds", "int", OMIT, None),
        6: ("revisionHistoryLimit", "int", KEEP, None),
        7: ("paused", "bool", OMIT, None),
        9: ("progressDeadlineSeconds", "int", KEEP, None),
    }),
    3: ("status", "message", OMIT, {  # conditions are skipped
        1: ("observedGeneration", "int", OMIT, None),
        2: ("replicas", "int", OMIT, None),
        3: ("updatedReplicas", "int", OMIT, None),
        7: ("readyReplicas", "int", OMIT, None),
        4: ("availableReplicas", "int", OMIT, None),
        5: ("unavailableReplicas", "int", OMIT, None),
        9: ("terminatingReplicas", "int", KEEP, None),
        8: ("collisionCount", "int", KEEP, None),
    }),
}

# ----------------------------------------------------------------------------------------------
# batch/v1

JOB_SPEC = {
    1: ("parallelism", "int", KEEP, None),
    2: ("completions", "int", KEEP, None),
    3: ("activeDeadlineSeconds", "int", KEEP, None),
    7: ("backoffLimit", "int", KEEP, None),
    12: ("backoffLimitPerIndex", "int", KEEP, None),
    13: ("maxFailedIndexes", "int", KEEP, None),
    4: ("selector", "message", KEEP, LABEL_SELECTOR),
    5: ("manualSelector", "bool", KEEP, None),
    6: ("template", "message", ALWAYS, POD_TEMPLATE_SPEC),
    8: ("ttlSecondsAfterFinished", "int", KEEP, None),
    9: ("completionMode", "string", KEEP, None),
    10: ("suspend", "bool", KEEP, None),
    14: ("podReplacementPolicy", "string", KEEP, None),
    15: ("managedBy", "string", KEEP, None),
}

JOB = {
    1: ("metadata", "message", OMIT, OBJECT_META),
    2: ("spec", "message", OMIT, JOB_SPEC),
    3: ("status", "message", OMIT, {  # conditions, times and uncountedTerminatedPods are skipped
        4: ("active", "int", OMIT, None),
        5: ("succeeded", "int", OMIT, None),
        6: ("failed", "int", OMIT, None),
        11: ("terminating", "int", KEEP, None),
        7: ("completedIndexes", "string", OMIT, None),
        10: ("failedIndexes", "string", KEEP, None),
        9: ("ready", "int", KEEP, None),
    }),
}

CRON_JOB = {
    1: ("metadata", "message", OMIT, OBJECT_META),
    2: ("spec", "message", OMIT, {
        1: ("schedule", "string", ALWAYS, None),
        8: ("timeZone", "string", KEEP, None),
        2: ("startingDeadlineSeconds", "int", KEEP, None),
        3: ("concurrencyPolicy", "string", OMIT, None),
        4: ("suspend", "bool", KEEP, None),
        5: ("jobTemplate", "message", ALWAYS, {
            1: ("metadata", "message", OMIT, OBJECT_META),
            2: ("spec", "message", OMIT, JOB_SPEC),
        }),
        6: ("successfulJobsHistoryLimit", "int", KEEP, None),
        7: ("failedJobsHistoryLimit", "int", KEEP, None),
    }),
    3: ("status", "message", OMIT, {  # the active ObjectReferences are skipped
        4: ("lastScheduleTime", "time", KEEP, None),
        5: ("lastSuccessfulTime", "time", KEEP, None),
    }),
}

# ----------------------------------------------------------------------------------------------
# rbac.authorization.k8s.io/v1

POLICY_RULE = {
    1: ("verbs", "strings", ALWAYS, None),
    2: ("apiGroups", "strings", OMIT, None),
    3: ("resources", "strings", OMIT, None),
    4: ("resourceNames", "strings", OMIT, None),
    5: ("nonResourceURLs", "strings", OMIT, None),
}

ROLE = {
    1: ("metadata", "message", OMIT, OBJECT_META),
    2: ("rules", "messages", ALWAYS, POLICY_RULE),
}

CLUSTER_ROLE = {
    1: ("metadata", "message", OMIT, OBJECT_META),
    2: ("rules", "messages", ALWAYS, POLICY_RULE),
    3: ("aggregationRule", "message", KEEP, {1: ("clusterRoleSelectors", "messages", OMIT, LABEL_SELECTOR)}),
}

SUBJECT = {
    1: ("kind", "string", ALWAYS, None),
    2: ("apiGroup", "string", OMIT, None),
    3: ("name", "string", ALWAYS, None),
    4: ("namespace", "string", OMIT, None),
}

ROLE_REF = {
    1: ("apiGroup", "string", ALWAYS, None),
    2: ("kind", "string", ALWAYS, None),
    3: ("name", "string", ALWAYS, None),
}

ROLE_BINDING = {  # and ClusterRoleBinding
    1: ("metadata", "message", OMIT, OBJECT_META),
    2: ("subjects", "messages", OMIT, SUBJECT),
    3: ("roleRef", "message", ALWAYS, ROLE_REF),
}

# ----------------------------------------------------------------------------------------------
# the envelope and the registry

RUNTIME_UNKNOWN = {
    1: ("typeMeta", "message", KEEP, {1: ("apiVersion", "string", OMIT, None), 2: ("kind", "string", OMIT, None)}),
    2: ("raw", "raw", OMIT, None),
    3: ("contentEncoding", "string", OMIT, None),
    4: ("contentType", "string", OMIT, None),
}

RBAC = "rbac.authorization.k8s.io/v1"

# (apiVersion, kind) -> schema. DeleteOptions is registered in every group version, so
# ``kubelab.protobuf`` accepts it with any apiVersion.
KINDS = {
    ("v1", "Secret"): SECRET,
    ("v1", "ConfigMap"): CONFIG_MAP,
    ("v1", "Namespace"): NAMESPACE,
    ("v1", "ServiceAccount"): SERVICE_ACCOUNT,
    ("v1", "Service"): SERVICE,
    ("policy/v1", "Eviction"): EVICTION,
    ("policy/v1beta1", "Eviction"): EVICTION,
    ("policy/v1", "PodDisruptionBudget"): POD_DISRUPTION_BUDGET,
    ("apps/v1", "Deployment"): DEPLOYMENT,
    ("batch/v1", "Job"): JOB,
    ("batch/v1", "CronJob"): CRON_JOB,
    (RBAC, "Role"): ROLE,
    (RBAC, "ClusterRole"): CLUSTER_ROLE,
    (RBAC, "RoleBinding"): ROLE_BINDING,
    (RBAC, "ClusterRoleBinding"): ROLE_BINDING,
}
