"""The governance app: the kernel every app builds on, notifications, the reviewer inbox and the
contract catalog. It is the lowest layer and imports no other product package."""
