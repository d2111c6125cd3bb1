"""Exchange services: identity, outgoing (metadata, fitness, export), incoming (gates, peers),
trials. Views, API endpoints, commands and tasks call these and hold no rules."""
