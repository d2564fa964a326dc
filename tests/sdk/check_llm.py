"""The official Firecrawl Python SDK's language-model calls against a ferrocrawl server whose
model is a local stand-in speaking the OpenAI protocol: scrape with the json format (schema
and prompt), summary and question, the crawl options proposed for a prompt, extract and
agent jobs, and the token usage. Run by the
integration tests with SDK_API_URL, SDK_API_KEY and SDK_SITE set; exits non-zero on the
first failed assertion."""

import os

from firecrawl import Firecrawl
from firecrawl.v2.types import JsonFormat, QuestionFormat

api_url = os.environ["SDK_API_URL"]
key = os.environ["SDK_API_KEY"]
site = os.environ["SDK_SITE"]

app = Firecrawl(api_key=key, api_url=api_url)
schema = {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}
doc = app.scrape(site + "/article", formats=[JsonFormat(type="json", schema=schema, prompt="the title")])
assert doc.json == {"title": "Growing Tomatoes at Home"}, doc.json
assert doc.metadata.credits_used == 5, doc.metadata

doc = app.scrape(
    site + "/article",
    formats=["summary", QuestionFormat(type="question", question="What grows here?")],
)
assert doc.summary == "A page about Growing Tomatoes at Home.", doc.summary
assert doc.answer and doc.answer.endswith("What grows here?"), doc.answer

preview = app.crawl_params_preview(site + "/article", "the /guides section, 12 pages")
assert preview.include_paths == ["^/guides(/.*)?$"], preview
assert preview.limit == 12, preview

extracted = app.extract(urls=[site + "/article"], prompt="the title", schema=schema, poll_interval=1, timeout=60)
assert extracted.status == "completed", extracted
assert extracted.data == {"title": "Growing Tomatoes at Home"}, extracted.data

agent = app.agent(urls=[site + "/article"], prompt="What is the page's title?", poll_interval=1, timeout=60)
assert agent.status == "completed", agent
assert agent.data == {"title": "Growing Tomatoes at Home"}, agent.data

usage = app.get_token_usage()
assert usage.remaining_tokens is not None, usage
print("sdk llm ok")
