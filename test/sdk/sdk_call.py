"""Calls the vendored NX1 SDK (test/sdk/nx1-sdk/src, unmodified) as a user's script would.

For test/integration/suites/nx1-sdk.test.ts. Reads one JSON object on stdin (the key never goes on
a command line):

    {"api_key": "...", "host": "https://127.0.0.1:3443", "verify_ssl": false,
     "calls": [{"method": "health.ping", "args": [], "kwargs": {}}, ...]}

(`verify_ssl` left out: the SDK's default, True, which honours REQUESTS_CA_BUNDLE.) Makes one
`NX1Client(api_key=..., host=..., verify_ssl=...)` and makes each call in turn on it, then
prints one JSON object on stdout:

    {"base_url": "<the client's base URL>",
     "results": [{"ok": true, "result": <what the SDK returned>}
                 | {"ok": false, "error": "<exception class>", "message": "...", "status_code": n|null}]}
"""

import json
import sys

from nx1_sdk import NX1Client
from nx1_sdk.exceptions import NX1Error


def main() -> None:
    spec = json.load(sys.stdin)
    options = {"api_key": spec["api_key"], "host": spec["host"]}
    if "verify_ssl" in spec:
        options["verify_ssl"] = spec["verify_ssl"]
    client = NX1Client(**options)
    results = []
    for call in spec["calls"]:
        target = client
        for part in call["method"].split("."):
            target = getattr(target, part)
        try:
            result = target(*call.get("args", []), **call.get("kwargs", {}))
            results.append({"ok": True, "result": result})
        except NX1Error as e:
            results.append(
                {
                    "ok": False,
                    "error": type(e).__name__,
                    "message": str(e),
                    "status_code": getattr(e, "status_code", None),
                }
            )
    json.dump({"base_url": client.base_url, "results": results}, sys.stdout)


if __name__ == "__main__":
    main()
