# One image for every party; docker-compose.yml runs `mpcbandit party ...` per service.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY mpcbandit mpcbandit
COPY parties parties
COPY dealer dealer
RUN pip install --no-cache-dir . && useradd --create-home mpc
COPY configs configs
ENTRYPOINT ["mpcbandit"]
