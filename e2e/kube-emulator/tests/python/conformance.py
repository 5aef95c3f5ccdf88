"""Scenarios run by the Rust conformance suite with the official Python `kubernetes` client (37.x).

Usage: python conformance.py KUBECONFIG SCENARIO
Each scenario asserts what a real kube-apiserver does and exits non-zero with a message when it does not.
"""

import sys
import time
import threading

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

GROUP, VERSION, PLURAL = "conformance.example.com", "v1", "gizmos"


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def crud(api_client):
    """CRUD on ConfigMaps and on the Gizmo custom resource (bodies sent without Content-Type)."""
    core = client.CoreV1Api(api_client)
    cm = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py-cm"), data={"a": "1"})
    created = core.create_namespaced_config_map("default", cm)
    check(created.metadata.uid, "uid set on create")
    check(created.metadata.resource_version.isdigit(), "resourceVersion is a decimal string")
    got = core.read_namespaced_config_map("py-cm", "default")
    check(got.data == {"a": "1"}, "read back data")
    got.data["b"] = "2"
    replaced = core.replace_namespaced_config_map("py-cm", "default", got)
    check(int(replaced.metadata.resource_version) > int(created.metadata.resource_version), "PUT bumps resourceVersion")
    names = [i.metadata.name for i in core.list_namespaced_config_map("default").items]
    check("py-cm" in names, "listed")
    status = core.delete_namespaced_config_map("py-cm", "default")
    outcome = status["status"] if isinstance(status, dict) else status.status
    check(outcome == "Success", "delete answers a Success Status: %r" % (status,))
    try:
        core.read_namespaced_config_map("py-cm", "default")
        check(False, "deleted object must 404")
    except ApiException as err:
        check(err.status == 404, "404 after delete")

    custom = client.CustomObjectsApi(api_client)
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Gizmo", "metadata": {"name": "py-g"}, "spec": {"size": 2}}
    obj = custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, body)
    check(obj["metadata"]["generation"] == 1, "generation 1 on create")
    obj["spec"]["size"] = 3
    obj = custom.replace_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "py-g", obj)
    check(obj["metadata"]["generation"] == 2, "generation bumps on spec change")
    listed = custom.list_namespaced_custom_object(GROUP, VERSION, "default", PLURAL)
    check(listed["kind"] == "GizmoList" and len(listed["items"]) == 1, "custom list")
    custom.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "py-g")
    print("crud ok")


def patches(api_client):
    """Merge patch (the client's default for custom objects) and JSON patch."""
    core = client.CoreV1Api(api_client)
    core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py-patch"), data={"a": "1"}))
    merged = core.patch_namespaced_config_map("py-patch", "default", {"data": {"b": "2"}})
    check(merged.data == {"a": "1", "b": "2"}, "strategic/merge patch merges data")
    patched = core.patch_namespaced_config_map(
        "py-patch", "default", [{"op": "replace", "path": "/data/a", "value": "9"}, {"op": "remove", "path": "/data/b"}]
    )
    check(patched.data == {"a": "9"}, "JSON patch applied: %r" % (patched.data,))
    custom = client.CustomObjectsApi(api_client)
    custom.create_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL,
        {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Gizmo", "metadata": {"name": "py-pg"}, "spec": {"size": 1}},
    )
    obj = custom.patch_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "py-pg", {"spec": {"color": "red"}})
    check(obj["spec"] == {"size": 1, "color": "red"}, "merge patch on a custom object")
    print("patches ok")


def conflict(api_client):
    """A PUT with a stale resourceVersion is a 409 Conflict with the apiserver's text."""
    core = client.CoreV1Api(api_client)
    first = core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py-409"), data={"a": "1"}))
    core.patch_namespaced_config_map("py-409", "default", {"data": {"a": "2"}})
    first.data["a"] = "3"
    try:
        core.replace_namespaced_config_map("py-409", "default", first)
        check(False, "stale PUT must fail")
    except ApiException as err:
        check(err.status == 409, "409 on stale resourceVersion, got %s" % err.status)
        check("the object has been modified; please apply your changes to the latest version and try again" in err.body, err.body)
    print("conflict ok")


def watching(api_client):
    """Watch from a resourceVersion sees later changes in order."""
    core = client.CoreV1Api(api_client)
    start = core.list_namespaced_config_map("default").metadata.resource_version
    seen = []

    def produce():
        core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py-w"), data={"a": "1"}))
        core.patch_namespaced_config_map("py-w", "default", {"data": {"a": "2"}})
        core.delete_namespaced_config_map("py-w", "default")

    w = watch.Watch()
    producer = threading.Timer(0.2, produce)
    producer.start()
    for event in w.stream(core.list_namespaced_config_map, "default", resource_version=start, timeout_seconds=10):
        if event["object"].metadata.name != "py-w":
            continue
        seen.append(event["type"])
        if event["type"] == "DELETED":
            w.stop()
    producer.join()
    check(seen == ["ADDED", "MODIFIED", "DELETED"], "watch events %r" % seen)
    print("watch ok")


def authz(api_client):
    """TokenRequest mints a ServiceAccount token; RBAC answers it 403 Forbidden until a RoleBinding grants
    access, and a SelfSubjectAccessReview as that ServiceAccount agrees with RBAC."""
    import json

    core = client.CoreV1Api(api_client)
    core.create_namespaced_service_account("default", client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="py-bot")))
    request = client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600))
    minted = core.create_namespaced_service_account_token("py-bot", "default", request)
    token = minted.status.token
    check(token and minted.status.expiration_timestamp, "a token with its expiry")
    try:
        core.create_namespaced_service_account_token(
            "py-bot", "default", client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=60))
        )
        check(False, "a 60 s token is refused")
    except ApiException as e:
        check(e.status == 422, "too short a token is Invalid, got %s" % e.status)
        check("may not specify a duration less than 10 minutes" in json.loads(e.body)["message"], e.body)

    bot_config = client.Configuration()
    bot_config.host = api_client.configuration.host
    bot_config.ssl_ca_cert = api_client.configuration.ssl_ca_cert
    bot_config.api_key = {"authorization": "Bearer " + token}
    bot = client.ApiClient(bot_config)
    bot_core = client.CoreV1Api(bot)
    try:
        bot_core.list_namespaced_secret("default")
        check(False, "the ServiceAccount may not list Secrets")
    except ApiException as e:
        body = json.loads(e.body)
        check(e.status == 403 and body["reason"] == "Forbidden", "403 Forbidden, got %s %s" % (e.status, e.body))
        check(
            body["message"] == 'secrets is forbidden: User "system:serviceaccount:default:py-bot" cannot list resource '
            '"secrets" in API group "" in the namespace "default"',
            body["message"],
        )
    rbac = client.RbacAuthorizationV1Api(api_client)
    rbac.create_namespaced_role("default", client.V1Role(
        metadata=client.V1ObjectMeta(name="py-secret-reader"),
        rules=[client.V1PolicyRule(api_groups=[""], resources=["secrets"], verbs=["list"])]))
    rbac.create_namespaced_role_binding("default", client.V1RoleBinding(
        metadata=client.V1ObjectMeta(name="py-bot-reads"),
        role_ref=client.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="Role", name="py-secret-reader"),
        subjects=[client.RbacV1Subject(kind="ServiceAccount", name="py-bot", namespace="default")]))
    # A real apiserver's RBAC authorizer sees a new binding a moment later (its informer); retry until a deadline.
    deadline = time.monotonic() + 10
    while True:
        try:
            bot_core.list_namespaced_secret("default")
            break
        except ApiException as e:
            check(e.status == 403 and time.monotonic() < deadline, "the binding takes effect: %s %s" % (e.status, e.body))
            time.sleep(0.1)
    review = client.AuthorizationV1Api(bot).create_self_subject_access_review(client.V1SelfSubjectAccessReview(
        spec=client.V1SelfSubjectAccessReviewSpec(resource_attributes=client.V1ResourceAttributes(
            namespace="default", verb="delete", resource="secrets"))))
    check(review.status.allowed is False, "delete is not allowed: %r" % review.status)
    review = client.AuthorizationV1Api(bot).create_self_subject_access_review(client.V1SelfSubjectAccessReview(
        spec=client.V1SelfSubjectAccessReviewSpec(resource_attributes=client.V1ResourceAttributes(
            namespace="default", verb="list", resource="secrets"))))
    check(review.status.allowed is True, "list is allowed: %r" % review.status)
    check("RoleBinding \"py-bot-reads/default\"" in review.status.reason, review.status.reason)
    print("authz ok")


SCENARIOS = {"crud": crud, "patches": patches, "conflict": conflict, "watch": watching, "authz": authz}

if __name__ == "__main__":
    kubeconfig, scenario = sys.argv[1], sys.argv[2]
    api = config.new_client_from_config(config_file=kubeconfig)
    SCENARIOS[scenario](api)
