"""SAMBA (Ciucanu et al. 2022): secure federated multi-armed bandits.

``protocol`` holds the parties (data client, Controller, Comp, a data owner per arm) and
``PROTOCOL``; ``streams`` their seeds and keyed streams (fresh in a deployment, derived from the
config seed in the reproduction mode).
"""
