"""DeepCritical: a biomedical deep-research agent with validated citations."""

__version__ = "0.1.0"
