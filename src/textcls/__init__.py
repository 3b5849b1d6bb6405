"""textcls: compact neural text classifiers, reproduced from their papers."""

__version__ = "0.1.0"
