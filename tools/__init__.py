"""Maintainer tools, run from the repository (``make exercises``, ``make notebooks``);
not part of the installed ``attnlib`` package."""
