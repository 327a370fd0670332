"""Helpers the tests import: plain functions and classes, never fixtures. Fixtures live in the
conftest modules, which take their helpers from here too, so a test never reaches into one."""
