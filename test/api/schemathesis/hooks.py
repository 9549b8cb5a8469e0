# Schemathesis hooks for test/api/schemathesis.slow.test.ts: a check that no response crosses workspaces, and a
# record of every response, from which the test learns the case count and what the 2xx creates made.
import json
import os
from urllib.parse import unquote, urlsplit

import schemathesis

# Ids of resources in another workspace than the key's: each one must be a 404 (or a refusal), never a read.
FOREIGN = json.loads(os.environ["FUZZ_FOREIGN_IDS"])
RECORD = os.environ["FUZZ_RECORD"]


def _sent(request):
    url = unquote(request.url or "")
    body = request.body or b""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    return url, body


@schemathesis.check
def no_cross_workspace_read(ctx, response, case):
    """Another workspace's id in the path is never answered 2xx, in a body reference is never accepted, and no
    response shows a foreign id the request did not carry."""
    url, body = _sent(response.request)
    path = urlsplit(url).path
    ok = 200 <= response.status_code < 300
    for fid in FOREIGN:
        if ok and fid in path.split("/"):
            raise AssertionError(f"{response.status_code} for another workspace's {fid} in the path")
        if ok and f'"{fid}"' in body and response.request.method == "POST":
            raise AssertionError(f"{response.status_code} for a body naming another workspace's {fid}")
        if fid in response.text_lossy() and fid not in url and fid not in body:
            raise AssertionError(f"the response shows another workspace's {fid}")


@schemathesis.check
class RecordResponses:
    """Appends one line per response: method, path, status, for a 2xx JSON object its id, and whether the path names
    another workspace's id."""

    def after_response(self, ctx, response, case):
        url, _ = _sent(response.request)
        made = None
        if 200 <= response.status_code < 300 and (response.headers.get("content-type") or [""])[0].startswith("application/json"):
            try:
                doc = response.json()
                made = doc.get("id") if isinstance(doc, dict) else None
            except ValueError:
                pass
        path = urlsplit(url).path
        foreign = any(fid in path.split("/") for fid in FOREIGN)
        line = {"method": response.request.method, "path": path, "status": response.status_code, "id": made, "foreign": foreign}
        with open(RECORD, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")
