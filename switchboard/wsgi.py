"""WSGI entry point (the product is served over ASGI; this exists for tooling that expects it)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "switchboard.settings")

application = get_wsgi_application()
