"""The ASGI application: Django for HTTP; Channels routes WebSockets once the live issue lands."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "switchboard.settings")

django_application = get_asgi_application()

from channels.routing import ProtocolTypeRouter  # noqa: E402  (needs the app registry ready)

application = ProtocolTypeRouter({"http": django_application})
