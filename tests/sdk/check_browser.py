"""The official Firecrawl Python SDK's browser sessions against a ferrocrawl server.

Run by the integration tests with SDK_API_URL, SDK_API_KEY and SDK_SITE set. Exits
non-zero (with the failing assertion) when the SDK cannot use the server.
"""

import os

from firecrawl import Firecrawl

app = Firecrawl(api_key=os.environ["SDK_API_KEY"], api_url=os.environ["SDK_API_URL"])
site = os.environ["SDK_SITE"]

made = app.browser(ttl=120, activity_ttl=60, stream_web_view=True)
assert made.success and made.id, made
assert made.cdp_url.startswith("ws://") and "/v2/cdp/" in made.cdp_url, made
assert "/v2/live/" in made.live_view_url, made

ran = app.browser_execute(made.id, "document.body.innerHTML = '<p id=x>from the sdk</p>'; 20 + 22", language="node")
assert ran.success and ran.result == "42" and ran.exit_code == 0, ran
ran = app.browser_execute(made.id, "document.getElementById('x').textContent", language="node")
assert ran.result == "from the sdk", ran

active = app.list_browsers(status="active")
assert [s.id for s in active.sessions] == [made.id], active
assert active.sessions[0].status == "active" and active.sessions[0].cdp_url == made.cdp_url, active

ended = app.delete_browser(made.id)
assert ended.success and ended.credits_billed == 2, ended
destroyed = app.list_browsers(status="destroyed")
assert [s.id for s in destroyed.sessions] == [made.id], destroyed
print("sdk browser ok")
