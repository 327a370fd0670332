"""factory-boy factories, one module per app (tests.factories.agents, .sessions, .memory, .governance).

Defaults make a valid row and nothing more; a test names what it asserts on as an override. Call a
factory as a class, or use ``.create()`` where typed code takes the result: mypy knows that
``.create()`` returns the model, not what calling the factory class returns."""
