"""mpcbandit: privacy-preserving bandit protocols, every party its own process over ZeroMQ."""

__version__ = "0.1.0"
