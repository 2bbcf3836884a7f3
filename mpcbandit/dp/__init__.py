"""Differential privacy for linear bandits: the tree-based mechanism and its accounting.

``noise`` draws Gaussian and Wishart node noise from a cryptographic source, ``tree`` is the
tree-based mechanism for private prefix sums (one implementation, used by FedUCB and
JDP-LinUCB), ``accounting`` turns (epsilon, delta) into the noise scale and the regularizer
bounds rho_min, rho_max, gamma/kappa of the papers, and ``privatizer`` is Algorithm 2 of
Dubey & Pentland (2020): a tree fed with the augmented Gram matrices [x y]^T [x y].
"""
