"""`mpcbandit serve`'s shell: the HTTP API each organisation's application talks to, the batching
window, the write-ahead log and the operations around them. It knows no shares: a backend (the
secure part) pulls batches from it and reports decisions, health and costs
(`mpcbandit/serve/backend.py`). docs/serve.md is the user's view."""

#: how long a drain may take beyond the decision deadline (the backend's last batch); here, not
#: in server.py, so that a process that serves no HTTP (the launcher of `serve --out`,
#: serve-replay) need not import aiohttp (~0.2 CPU-s a process)
DRAIN_MARGIN_S = 10.0
