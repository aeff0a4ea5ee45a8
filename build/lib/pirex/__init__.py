"""pirex: Docker-packaged performance experiments for the Raspberry Pi, and the tool that runs them."""

__version__ = "0.1.0"
