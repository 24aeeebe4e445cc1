"""Models arrive with their issue; the app is registered so its migrations have a home."""
