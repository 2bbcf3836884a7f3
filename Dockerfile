# One image for every party; the compose files run `mpcbandit party ...` per service.
# Data sets are not in the image: mount a folder at /data (MPCBANDIT_DATA points there).
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md LICENSE ./
COPY mpcbandit mpcbandit
COPY parties parties
COPY dealer dealer
RUN pip install --no-cache-dir . && useradd --create-home --uid 1000 mpc \
    && mkdir -p /keys /results /data && chown mpc /results
COPY configs configs
ENV MPCBANDIT_DATA=/data
USER mpc
ENTRYPOINT ["mpcbandit"]
