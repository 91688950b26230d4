"""Checkers for the exercise notebooks, one module per lesson.

Every module here (except those starting with ``_``) is imported by
``attnlib.selfcheck`` the first time a check runs; each registers its exercise ids
with ``@attnlib.selfcheck.exercise``. See the docstring of ``attnlib.selfcheck`` for
how to add a lesson's checkers.
"""
