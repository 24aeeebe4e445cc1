"""Webhook intake: deliveries become events, events become todos through routing rules.

``views`` is the HTTP face (``POST /hooks/{slug}`` and its ASGI body guard), ``deliveries``
verifies, stores and routes one delivery, ``routing`` is the pure rule language and signature
check, ``sources`` is the only writer of sources and rules, ``board`` and ``forms`` are their
Board pages. Intake creates todos only through ``todos.lifecycle.create``.
"""
