# One image for every inplace role (apiserver, quota, scheduler, kubelet, hotplug, projector) and
# for the one-shot `inplace topics` / `inplace migrate` job; docker-compose.yml picks the role with
# `inplace serve <role>`.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1

# Install the project as a regular package (no editable install, no sources left behind).
WORKDIR /src
COPY pyproject.toml ./
COPY inplace/ inplace/
COPY services/ services/
COPY schemas/ schemas/
RUN pip install --no-cache-dir . \
    && cd / && rm -rf /src

# Run as an unprivileged user; the roles only need to bind ports above 1024.
RUN groupadd --system --gid 10001 inplace \
    && useradd --system --uid 10001 --gid inplace --create-home --home-dir /home/inplace inplace
USER inplace
WORKDIR /home/inplace

# DEFAULT_PORTS in inplace/core/settings.py:
# apiserver 8080, quota 8081, scheduler 8082, kubelet 8083, hotplug 8084, projector 8085.
EXPOSE 8080 8081 8082 8083 8084 8085

CMD ["inplace", "--help"]
