"""OAuth 2.1 for ``/mcp``: the plane is both the protected resource and its authorization server.

django-oauth-toolkit does the mechanics (authorization code with PKCE, tokens, refresh, revocation,
RFC 8414 and RFC 9728 metadata, dynamic registration, client ID metadata documents). What is ours:
the consent page, where a signed-in operator decides whom a client acts as (subjects.py); the
token check that turns a token bound to ``/mcp`` into the principal it was granted (tokens.py);
and the admission of clients (registration.py) and scopes (validator.py).
"""
