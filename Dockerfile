FROM python:3.12-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 ENGRAM_DATA_DIR=/data HOME=/tmp
WORKDIR /app
COPY pyproject.toml README.md ./
COPY engramsite engramsite
COPY lib lib
COPY memory memory
COPY exchange exchange
COPY dialectic dialectic
COPY patterns patterns
# Templates and static files are package data of the apps: the installed package is the server.
RUN pip install --no-cache-dir . && useradd --system --uid 1000 engram && mkdir -p /data \
    && chown engram /data
COPY manage.py ./
USER engram
EXPOSE 8000
CMD ["gunicorn", "engramsite.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--access-logfile", "-"]
