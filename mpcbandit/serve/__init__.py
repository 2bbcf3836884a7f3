"""`mpcbandit serve`'s shell: the HTTP API each organisation's application talks to, the batching
window, the write-ahead log and the operations around them. It knows no shares: a backend (the
secure part) pulls batches from it and reports decisions, health and costs
(`mpcbandit/serve/backend.py`). docs/serve.md is the user's view."""
