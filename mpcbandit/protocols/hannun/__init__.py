"""Hannun et al. 2019: the ε-greedy linear bandit on secret shares over Z/2⁶⁴.

``protocol`` is the batch run (its parties, one step of Algorithm 1, ``PROTOCOL``); ``ops`` the
batched decide and update on shares that the service runs; ``reference`` and ``serve_reference``
the plaintext and fixed-point references; ``stream`` the dealer's exploration stream; the
service's parties are ``serve`` (p'', the dealer, the entry point), ``serve_puller`` (p', with
``serve_order``: its op log in op order, and ``serve_flights``: its ops under way and their pace)
and ``serve_holder`` (the feature holders, with ``serve_holder_queue``: which op each starts
when); ``serve_replay`` checks a service's logs in float64.
"""
