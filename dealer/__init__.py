"""The trusted dealer: correlated randomness for the computing parties (offline phase).

``dealer.material`` defines each kind of material (pure maths), ``dealer.service.serve`` is
the dealer party's loop.
"""

from dealer.service import serve

__all__ = ["serve"]
