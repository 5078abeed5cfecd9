"""The apiserver's /metrics counts and times requests as kube-apiserver does
(apiserver_request_total, apiserver_request_duration_seconds), and shows the log round trip
each write paid (inplace_log_write_seconds): what an operator reads to see where a PATCH …/resize
spends its time."""

from __future__ import annotations

from pathlib import Path

from tests.integration.conftest import RoleProcess, kubectl, metric

NGINX = str(Path(__file__).parent / "manifests" / "01-nginx-docs.yaml")
RESIZE = '{"spec":{"containers":[{"name":"nginx","resources":{"requests":{"cpu":"150m"}}}]}}'


def _sample(name: str, verb: str, resource: str, subresource: str, scope: str, **more: str) -> str:
    labels = {
        "verb": verb,
        "dry_run": more.get("dry_run", ""),
        "group": "",
        "version": "v1" if resource else "",
        "resource": resource,
        "subresource": subresource,
        "scope": scope,
        "component": "apiserver",
        **({"code": more["code"]} if "code" in more else {}),
    }
    # prometheus_client writes a sample's labels sorted by name.
    return name + "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


async def test_requests_are_counted_and_timed_as_kube_apiserver_does(
    apiserver: RoleProcess,
) -> None:
    writes_before = await metric(apiserver, 'inplace_log_write_seconds_count{role="apiserver"}')
    await kubectl(apiserver, "apply", "-f", NGINX)
    resize = ("patch", "pod", "nginx", "--subresource", "resize", "-p", RESIZE)
    await kubectl(apiserver, *resize)
    await kubectl(apiserver, *resize[:5], "--dry-run=server", "-p", RESIZE)
    not_found = _sample("apiserver_request_total", "GET", "pods", "", "resource", code="404")
    before = await metric(apiserver, not_found)  # kubectl apply's GET of the new pod is one
    missing = await kubectl(apiserver, "get", "pod", "nope", check=False)
    assert "NotFound" in missing.stderr
    async with apiserver.client() as client:
        assert (await client.get(f"{apiserver.url}/api/v1/made-up")).status_code == 404

    total = "apiserver_request_total"
    patch = ("PATCH", "pods", "resize", "resource")
    assert await metric(apiserver, _sample(total, *patch, code="200")) == 1
    assert await metric(apiserver, _sample(total, *patch, dry_run="All", code="200")) == 1
    seconds = "apiserver_request_duration_seconds_count"
    assert await metric(apiserver, _sample(seconds, *patch)) == 1
    assert await metric(apiserver, not_found) == before + 1
    # A path naming no served resource is counted without its made-up name.
    assert await metric(apiserver, _sample(total, "GET", "", "", "", code="404")) >= 1
    # The create and the resize each paid one log round trip (the dry run none).
    writes = await metric(apiserver, 'inplace_log_write_seconds_count{role="apiserver"}')
    assert writes - writes_before == 2
