"""paperlab: six recent ML papers as tested PyTorch software, with their claims checked by running code.

Importing the package has no side effects; subpackages are imported on use.
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
