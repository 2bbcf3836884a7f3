"""O3M (Cao et al. 2023): vertical federated LinUCB / LinTS under an orthogonal mask.

``protocol`` is the batch run and ``PROTOCOL``; the service's parties are ``serve`` (the AP,
who leads) and ``serve_follower`` (the PMG and the passive participants); ``serve_replay``
checks a service's logs in float64.
"""
