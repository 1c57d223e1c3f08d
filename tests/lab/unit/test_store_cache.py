# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kubelab.store.Store's object cache (kube-apiserver's watch cache) against a real etcd.

Writes through the store are visible to get/list at once; a fresh store loads what etcd holds; a
write made behind the store's back makes the next compare-and-swap fail with a conflict, after
which the cache holds etcd's value; ``resync()`` reloads everything. Those run with the store's
etcd watch off (``watch=False``), so nothing else updates the cache meanwhile; the last tests
check the watch: another client's writes reach a watching store's cache.
"""

from __future__ import annotations

import json
import threading
import time

import pytest

from kubelab.errors import ApiError
from kubelab.etcd import EtcdProcess
from kubelab.resources import Registry
from kubelab.clone import clone
from kubelab.store import SharedObjectMutated, Store


@pytest.fixture(scope="module")
def etcd():
    with EtcdProcess() as proc:
        yield proc


@pytest.fixture
def store(etcd):
    return Store(etcd.client_url, watch=False)


def wait_for(check, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.02)


def types():
    registry = Registry()
    return registry.get("", "v1", "configmaps"), registry.get("", "v1", "namespaces")


def configmap(name: str, namespace: str, **data) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
            "data": dict(data)}


def names(items: list[dict]) -> list[tuple[str, str]]:
    return sorted((o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in items)


def test_writes_are_visible_at_once(store):
    cms, _ns = types()
    created = store.create(cms, configmap("a", "cache-1", k="1"))
    got = store.get(cms, "cache-1", "a")
    assert got == created and got["data"] == {"k": "1"}
    changed = store.get(cms, "cache-1", "a")
    changed["data"]["k"] = "2"
    updated = store.update(cms, changed)
    assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    assert store.get(cms, "cache-1", "a") == updated
    items, revision = store.list(cms, "cache-1")
    assert [o["data"] for o in items] == [{"k": "2"}]
    assert revision == store.revision() == int(updated["metadata"]["resourceVersion"])
    store.delete(cms, "cache-1", "a")
    assert store.get_or_none(cms, "cache-1", "a") is None
    assert store.list(cms, "cache-1")[0] == []
    with pytest.raises(ApiError) as info:
        store.update(cms, changed)
    assert info.value.code == 404


def test_reads_are_fresh_objects(store):
    cms, _ns = types()
    store.create(cms, configmap("fresh", "cache-2", k="1"))
    first = store.get(cms, "cache-2", "fresh")
    first["data"]["k"] = "mutated"
    store.list(cms, "cache-2")[0][0]["data"]["k"] = "mutated too"
    assert store.get(cms, "cache-2", "fresh")["data"] == {"k": "1"}


def test_shared_reads_hand_out_one_object_per_revision(store):
    """list(shared=True) is an informer lister: the same decoded object until the object changes."""
    cms, _ns = types()
    store.create(cms, configmap("shared", "cache-s", k="1"))
    first = store.list(cms, "cache-s", shared=True)[0][0]
    assert store.list(cms, "cache-s", shared=True)[0][0] is first
    assert store.list(cms, "cache-s")[0][0] is not first and store.list(cms, "cache-s")[0][0] == first
    body = store.get(cms, "cache-s", "shared")
    body["data"]["k"] = "2"
    updated = store.update(cms, body)
    second = store.list(cms, "cache-s", shared=True)[0][0]
    assert second is not first and second == updated and first["data"] == {"k": "1"}
    store.delete(cms, "cache-s", "shared")
    assert store.list(cms, "cache-s", shared=True)[0] == []


def test_a_changed_shared_object_is_caught_when_checking(store):
    cms, _ns = types()
    store.check_shared = True
    store.create(cms, configmap("guarded", "cache-g", k="1"))
    store.list(cms, "cache-g", shared=True)[0][0]["data"]["k"] = "changed by a careless reader"
    with pytest.raises(SharedObjectMutated, match="cache-g/guarded"):
        store.list(cms, "cache-g", shared=True)
    assert store.list(cms, "cache-g", shared=True)[0][0]["data"] == {"k": "1"}  # decoded afresh


def test_a_sampled_check_catches_a_changed_object_within_its_sample(store):
    cms, _ns = types()
    store.check_shared = 4  # KUBELAB_CHECK_SHARED=4: one shared read in four is checked
    store.create(cms, configmap("sampled", "cache-s", k="1"))
    store.list(cms, "cache-s", shared=True)[0][0]["data"]["k"] = "changed"
    with pytest.raises(SharedObjectMutated, match="cache-s/sampled"):
        for _read in range(4):
            store.list(cms, "cache-s", shared=True)


def test_events_after_reads_only_the_new_end(store):
    cms, _ns = types()
    first = store.create(cms, configmap("e1", "cache-e", k="1"))
    second = store.create(cms, configmap("e2", "cache-e", k="1"))
    third = store.create(cms, configmap("e3", "cache-e", k="1"))
    after = store.events_after(int(first["metadata"]["resourceVersion"]))
    assert [event[3]["metadata"]["name"] for event in after] == ["e2", "e3"]
    assert store.events_after(int(third["metadata"]["resourceVersion"])) == []
    assert [e[0] for e in store.events_after(int(second["metadata"]["resourceVersion"]) - 1)] == [
        int(second["metadata"]["resourceVersion"]), int(third["metadata"]["resourceVersion"])]


def test_dry_runs_leave_the_cache(store):
    cms, _ns = types()
    store.create(cms, configmap("dry", "cache-3", k="1"), dry_run=True)
    assert store.get_or_none(cms, "cache-3", "dry") is None
    store.create(cms, configmap("dry", "cache-3", k="1"))
    body = store.get(cms, "cache-3", "dry")
    body["data"]["k"] = "2"
    store.update(cms, body, dry_run=True)
    store.delete(cms, "cache-3", "dry", dry_run=True)
    assert store.get(cms, "cache-3", "dry")["data"] == {"k": "1"}


def test_list_by_namespace_and_cluster_wide(store):
    cms, nss = types()
    store.create(nss, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "cache-4a"}})
    for namespace, name in (("cache-4a", "x"), ("cache-4a", "y"), ("cache-4b", "x")):
        store.create(cms, configmap(name, namespace))
    assert names(store.list(cms, "cache-4a")[0]) == [("cache-4a", "x"), ("cache-4a", "y")]
    assert names(store.list(cms, "cache-4b")[0]) == [("cache-4b", "x")]
    everything = names(store.list(cms)[0])
    assert {("cache-4a", "x"), ("cache-4a", "y"), ("cache-4b", "x")} <= set(everything)
    assert all(o["kind"] == "ConfigMap" for o in store.list(cms)[0])
    assert "cache-4a" in [o["metadata"]["name"] for o in store.list(nss)[0]]
    assert all(o["kind"] == "Namespace" for o in store.list(nss)[0])
    # A namespace name that is a prefix of another one does not leak into its list.
    store.create(cms, configmap("z", "cache-4"))
    assert names(store.list(cms, "cache-4")[0]) == [("cache-4", "z")]


def test_cluster_wide_list_skips_deeper_keys(store, etcd):
    """The current rule: a namespaced type's cluster-wide list holds ``<ns>/<name>`` keys only."""
    cms, _ns = types()
    store.create(cms, configmap("kept", "cache-5"))
    store.etcd.txn_put(cms.prefix(None) + "cache-5/odd/deeper", b'{"metadata":{"name":"deeper"}}', 0)
    fresh = Store(etcd.client_url, watch=False)
    assert ("cache-5", "kept") in names(fresh.list(cms)[0])
    assert "deeper" not in [o["metadata"]["name"] for o in fresh.list(cms)[0]]
    assert "deeper" in [o["metadata"]["name"] for o in fresh.list(cms, "cache-5")[0]]


def test_fresh_store_loads_what_etcd_holds(store, etcd):
    cms, _ns = types()
    created = store.create(cms, configmap("loaded", "cache-6", k="v"))
    fresh = Store(etcd.client_url, watch=False)
    assert fresh.get(cms, "cache-6", "loaded") == created
    assert names(fresh.list(cms, "cache-6")[0]) == [("cache-6", "loaded")]
    assert fresh.revision() >= int(created["metadata"]["resourceVersion"])
    assert fresh.start_revision == fresh.revision()


def test_write_behind_the_back_is_a_conflict_then_cached(store):
    cms, _ns = types()
    store.create(cms, configmap("behind", "cache-7", k="mine"))
    key = cms.key("cache-7", "behind")
    [(_key, value, mod)] = store.etcd.range(key)[0]
    theirs = json.loads(value)
    theirs["data"] = {"k": "theirs"}
    ok, revision = store.etcd.txn_put(key, json.dumps(theirs).encode(), mod)
    assert ok
    assert store.get(cms, "cache-7", "behind")["data"] == {"k": "mine"}  # the cache does not know yet
    body = store.get(cms, "cache-7", "behind")
    body["data"] = {"k": "ours"}
    with pytest.raises(ApiError) as info:
        store.update(cms, body)
    assert info.value.code == 409
    now = store.get(cms, "cache-7", "behind")
    assert now["data"] == {"k": "theirs"} and now["metadata"]["resourceVersion"] == str(revision)
    body = store.get(cms, "cache-7", "behind")
    body["data"] = {"k": "ours"}
    assert store.update(cms, body)["data"] == {"k": "ours"}
    [(_key, value, _mod)] = store.etcd.range(key)[0]
    assert json.loads(value)["data"] == {"k": "ours"}


def test_delete_behind_the_back(store):
    cms, _ns = types()
    store.create(cms, configmap("gone", "cache-8"))
    key = cms.key("cache-8", "gone")
    store.etcd.txn_delete(key, store.etcd.range(key)[0][0][2])
    with pytest.raises(ApiError) as info:
        store.delete(cms, "cache-8", "gone")
    assert info.value.code == 409
    assert store.get_or_none(cms, "cache-8", "gone") is None
    # created behind the back: the store's create fails as etcd says, and the cache learns it
    store.etcd.txn_put(key, json.dumps(configmap("gone", "cache-8", k="x")).encode(), 0)
    with pytest.raises(ApiError) as info:
        store.create(cms, configmap("gone", "cache-8"))
    assert info.value.code == 409
    assert store.get(cms, "cache-8", "gone")["data"] == {"k": "x"}


def test_resync_picks_up_external_changes(store):
    cms, _ns = types()
    store.create(cms, configmap("r1", "cache-9"))
    store.create(cms, configmap("r2", "cache-9"))
    old_revision = store.revision()
    store.etcd.txn_delete(cms.key("cache-9", "r1"), store.etcd.range(cms.key("cache-9", "r1"))[0][0][2])
    store.etcd.txn_put(cms.key("cache-9", "r3"), json.dumps(configmap("r3", "cache-9")).encode(), 0)
    assert names(store.list(cms, "cache-9")[0]) == [("cache-9", "r1"), ("cache-9", "r2")]
    revision = store.resync()
    assert revision > old_revision and store.revision() == revision
    assert names(store.list(cms, "cache-9")[0]) == [("cache-9", "r2"), ("cache-9", "r3")]
    with pytest.raises(ApiError) as info:  # the event log starts over: older watches relist
        store.events_after(old_revision)
    assert info.value.code == 410
    assert store.events_after(revision) == []


def test_root_ca_key_is_not_cached(store):
    """``/kubelab/root-ca.crt`` (namespaces.GENERATED_CA_KEY) is written to etcd directly; it is no API object."""
    before = store.revision()
    store.etcd.txn_put("/kubelab/cache-test", b"pem", 0)
    assert all(not key.startswith("/kubelab/") for key in store._keys)  # pylint: disable=protected-access
    fresh = Store(store.etcd.url, watch=False)
    assert all(not key.startswith("/kubelab/") for key in fresh._keys)  # pylint: disable=protected-access
    assert store.revision() == before


def test_list_cost_before_and_after(store):
    """Not asserted: what one list of 300 objects costs through etcd (the old path) and from the cache."""
    cms, _ns = types()
    for index in range(300):
        store.create(cms, configmap("m%03d" % index, "cache-m", k="v" * 200))
    rounds = 20
    started = time.perf_counter()
    for _round in range(rounds):
        items, _rev = store.etcd.range(cms.prefix("cache-m"), prefix=True)
        [json.loads(value) for _key, value, _mod in items]
    via_etcd = (time.perf_counter() - started) / rounds
    started = time.perf_counter()
    for _round in range(rounds):
        cached = store.list(cms, "cache-m")[0]
    via_cache = (time.perf_counter() - started) / rounds
    assert len(cached) == 300
    print("\nlist of 300 ConfigMaps: etcd range + decode %.2f ms, cache %.2f ms" % (via_etcd * 1e3, via_cache * 1e3))


def test_watch_brings_another_clients_writes(store, etcd):
    """Two lab servers on one etcd (as two kube-apiservers): each one's cache follows the other's writes."""
    cms, _ns = types()
    watching = Store(etcd.client_url)
    try:
        mine = watching.create(cms, configmap("w-own", "cache-w", k="1"))
        theirs = store.create(cms, configmap("w-theirs", "cache-w", k="1"))
        assert wait_for(lambda: watching.get_or_none(cms, "cache-w", "w-theirs")) == theirs
        body = store.get(cms, "cache-w", "w-theirs")
        body["data"]["k"] = "2"
        updated = store.update(cms, body)
        assert wait_for(lambda: watching.get(cms, "cache-w", "w-theirs") == updated)
        assert watching.revision() >= int(updated["metadata"]["resourceVersion"])
        store.delete(cms, "cache-w", "w-theirs")
        assert wait_for(lambda: watching.get_or_none(cms, "cache-w", "w-theirs") is None)
        # its own writes, echoed by the watch, change nothing and leave no bookkeeping behind
        assert watching.get(cms, "cache-w", "w-own") == mine
        body = watching.get(cms, "cache-w", "w-own")
        body["data"]["k"] = "3"
        watching.update(cms, body)
        watching.delete(cms, "cache-w", "w-own")
        watching.create(cms, configmap("w-own", "cache-w", k="4"))
        assert wait_for(lambda: not watching._own and not watching._tombstones)  # pylint: disable=protected-access
        assert watching.get(cms, "cache-w", "w-own")["data"] == {"k": "4"}
        assert names(watching.list(cms, "cache-w")[0]) == [("cache-w", "w-own")]
        events = watching.events_after(int(mine["metadata"]["resourceVersion"]))
        assert [event[1] for event in events] == ["MODIFIED", "DELETED", "ADDED"]  # its own writes only
    finally:
        watching.close()


def test_owner_index_follows_writes_deletes_and_reloads(store, etcd):
    """The garbage collector's owner index: keys by owner UID, moved by updates, dropped by deletes,
    rebuilt by a fresh load."""
    cms, _ns = types()

    def owned(obj, *uids):
        obj["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": "p-" + uid, "uid": uid,
                                               "controller": True} for uid in uids]
        return obj

    key = cms.key("cache-o", "dep")
    store.create(cms, owned(configmap("dep", "cache-o"), "u-1", "u-2"))
    store.create(cms, configmap("other", "cache-o", note='"uid":"u-1"'))  # the UID elsewhere: not an owner
    assert store.owned_keys("u-1") == {key} and store.owned_keys("u-2") == {key}
    body = store.get(cms, "cache-o", "dep")
    store.update(cms, owned(body, "u-3"))
    assert store.owned_keys("u-1") == set() and store.owned_keys("u-3") == {key}
    assert Store(etcd.client_url, watch=False).owned_keys("u-3") == {key}  # a fresh load indexes what etcd holds
    store.delete(cms, "cache-o", "dep")
    assert store.owned_keys("u-3") == set() and not store._owned.get("u-3")  # pylint: disable=protected-access
    store.delete(cms, "cache-o", "other")


def test_concurrent_writers_commit_in_revision_order(store, etcd):
    """Writes of different keys are in flight at once (Store's stripes); the cache and the event log
    still take them in etcd's revision order, a waiter following the log misses none, the cache ends
    equal to etcd, the same key's writers still conflict, and the watch (bringing another client's
    writes meanwhile) takes none of the store's own writes for a stranger's."""
    cms, _ns = types()
    watching = Store(etcd.client_url)
    start = watching.revision()
    seen, stop = [], threading.Event()

    def follow():
        revision = start
        while not stop.is_set() or watching.events_after(revision):
            for event in watching.wait_for_events(revision, 0.05):
                seen.append(event[0])
                revision = event[0]

    def writer(index):
        for round_ in range(15):
            name = "p-%d-%d" % (index, round_)
            watching.create(cms, configmap(name, "cache-p", k="0"))
            body = watching.get(cms, "cache-p", name)
            body["data"]["k"] = "1"
            watching.update(cms, body)
            if round_ % 3 == 0:
                watching.delete(cms, "cache-p", name)
            shared = watching.get_or_none(cms, "cache-p", "shared")
            try:
                if shared is None:
                    watching.create(cms, configmap("shared", "cache-p", k=name))
                else:
                    shared["data"]["k"] = name
                    watching.update(cms, shared, expected_rv=shared["metadata"]["resourceVersion"])
            except ApiError as exc:
                assert exc.code in (409,), exc  # another writer of the same key got there first

    follower = threading.Thread(target=follow, daemon=True)
    follower.start()
    writers = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    try:
        for thread in writers:
            thread.start()
        for round_ in range(10):  # another etcd client writing meanwhile
            store.create(cms, configmap("ext-%d" % round_, "cache-p"))
        for thread in writers:
            thread.join(60)
        stop.set()
        follower.join(10)
        revisions = [event[0] for event in watching.events_after(start)]
        assert revisions == sorted(revisions) and len(set(revisions)) == len(revisions)
        assert seen == revisions  # the follower missed none and saw them in order
        assert wait_for(lambda: len(watching.list(cms, "cache-p")[0]) == 8 * 10 + 1 + 10)
        in_etcd, _revision = watching.etcd.range("/registry/configmaps/cache-p/", prefix=True)
        cached = watching.list(cms, "cache-p")[0]
        assert sorted((k.rsplit("/", 1)[1], m) for k, _v, m in in_etcd) == \
            sorted((o["metadata"]["name"], int(o["metadata"]["resourceVersion"])) for o in cached)
        assert wait_for(lambda: not watching._own and not watching._inflight)  # pylint: disable=protected-access
        assert all(event[2] is cms and event[3]["metadata"]["name"].startswith(("p-", "shared"))
                   for event in watching.events_after(start))  # the other client's writes have no events here
    finally:
        stop.set()
        watching.close()


def test_watch_after_compaction_resyncs(store, etcd):
    """A watch from a compacted revision is refused: the store relists, as a reflector does."""
    cms, _ns = types()
    behind = Store(etcd.client_url, watch=False)
    loaded = behind.revision()
    store.create(cms, configmap("c1", "cache-c"))
    store.create(cms, configmap("c2", "cache-c"))
    store.etcd._post("/kv/compaction", {"revision": store.etcd.revision()})  # pylint: disable=protected-access
    behind._watching = True  # pylint: disable=protected-access
    thread = threading.Thread(target=behind._watch_loop, daemon=True)  # pylint: disable=protected-access
    thread.start()
    try:
        assert wait_for(lambda: behind.get_or_none(cms, "cache-c", "c2"))
        assert behind.get_or_none(cms, "cache-c", "c1")
        assert behind.start_revision > loaded
    finally:
        behind.close()


def test_clone_is_a_deep_copy():
    obj = {"a": [1, {"b": (2, 3)}, None], "c": {"d": 1.5, "e": True}}
    copied = clone(obj)
    assert copied == obj and copied is not obj and copied["a"][1] is not obj["a"][1]
    assert copied["a"][1]["b"] == (2, 3)  # tuples stay tuples, as with copy.deepcopy
    copied["c"]["d"] = 0
    assert obj["c"]["d"] == 1.5
    lock = threading.Lock()
    with pytest.raises(TypeError):  # what neither pickle nor deepcopy can copy
        clone({"lock": lock})


def test_writers_give_way_to_a_watch_stream_until_it_sent(store):
    """A write waits while a watch stream has not sent an event recorded for it, at most GIVE_WAY_SECONDS
    after that event; once the stream reports it sent, writers go on at once."""
    from kubelab import store as store_module

    cm = types()[0]
    seen = store.subscribe(("ConfigMap",), stream=True)
    try:
        store.create(cm, configmap("give-way-1", "default"))
        assert seen.is_set()
        mark = store.stream_mark(seen)
        assert mark == 1
        started = time.monotonic()
        store.create(cm, configmap("give-way-2", "default"))  # the stream never sends: bounded wait
        waited = time.monotonic() - started
        assert waited >= store_module.GIVE_WAY_SECONDS * 0.5
        store.stream_sent(seen, store.stream_mark(seen))
        # nothing unsent: a writer does not wait; a streaming thread never waits
        streams = store._streams
        assert all(s.sent >= s.notified for s in streams.values())
        gave_way = []

        def stream_thread():
            store.streaming()
            before = store.stream_mark(seen)
            store.give_way()
            gave_way.append(before)

        store.create(cm, configmap("give-way-3", "default"))
        worker = threading.Thread(target=stream_thread)
        worker.start()
        worker.join(1.0)
        assert gave_way == [3]
    finally:
        store.unsubscribe(seen)
    assert store._streams == {}
