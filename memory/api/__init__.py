"""The REST edge of the memory app: the django-ninja router (`endpoints`), its schemas, token
auth, the API guard middleware and the rate limiter. Services never import from here."""
