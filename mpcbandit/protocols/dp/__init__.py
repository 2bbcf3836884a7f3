"""The differentially private linear bandits: FedUCB (Dubey & Pentland 2020, ``feducb``) and
joint-DP LinUCB (Shariff & Sheffet 2018, ``jdp``), with what they share in ``common``.
"""
