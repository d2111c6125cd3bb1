FROM python:3.12-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 ENGRAM_DATA_DIR=/data HOME=/tmp
WORKDIR /app
COPY pyproject.toml README.md ./
COPY engramsite engramsite
COPY memory memory
COPY exchange exchange
RUN pip install --no-cache-dir . && useradd --system --uid 1000 engram && mkdir -p /data \
    && chown engram /data
COPY manage.py ./
COPY templates templates
COPY static static
USER engram
EXPOSE 8000
CMD ["gunicorn", "engramsite.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--access-logfile", "-"]
