"""The only code that touches the network: codec, links, channel, accounting."""
