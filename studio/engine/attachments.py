"""How Mastra's TokenCounter prices image and file attachments (never as their base64 text).

An image costs what its provider would charge for its pixel size: OpenAI-style tiles (85 + 170
per 512px tile for the default counter, other figures for gpt-5, gpt-4o-mini, o1/o3 and
computer-use models), Anthropic's ``width * height / 750`` or Gemini's tiles / media resolution.
The size comes from the part's own fields or cached metadata, else from the inline bytes' header;
without a size the figure falls back to byte-size buckets. A non-image file with inline bytes
costs ``bytes / 4`` (PDFs have provider-specific floors); without bytes, the estimate of a small
JSON descriptor. Each function also returns the payload Mastra hashes into the cache key, so the
key (and any cached entry) matches Mastra's.
"""

from __future__ import annotations

import math
import re
from typing import Any

from studio.common.jscompat import (
    JS_WHITESPACE,
    UNDEFINED,
    coalesce,
    get,
    is_finite,
    is_nonblank,
    js_round,
    js_trim,
    json_stringify,
    sha256_hex,
    utf16_len,
)
from studio.common.jsurl import decode_uri_component, parse_url
from studio.engine.count_guards import require_decoded
from studio.engine.estimate_cache import ensure_mastra, part_mastra
from studio.engine.images import decode_image_bytes, image_dimensions, is_http_url, is_image_like_file

__all__ = [
    "attachment_filename",
    "attachment_mime",
    "file_bytes_estimate",
    "file_descriptor",
    "image_estimate",
    "is_image_file",
    "remote_payload",
    "resolve_dimensions",
    "source_stats",
]

_JS_WS_RUN = re.compile(f"[{JS_WHITESPACE}]+")
_REMOTE_ASSET = re.compile(r"(?i)(https?://|data:)")
_GOOGLE_RESOLUTIONS = {"low": 280, "medium": 560, "high": 1120, "ultra_high": 2240, "unspecified": 1120}


def is_image_file(part: Any) -> bool:
    """Return whether a `file` PART is priced as an image (TokenCounter's isImageLikeFilePart)."""
    return is_image_like_file(part, http_prefix_only=True)


# ------------------------------------------------------------------------------------ descriptors

def _filename_from_data(data: Any) -> str | None:
    """Last path segment of an http(s) URL, URI-decoded; UncountableMessage where decodeURIComponent throws."""
    url = parse_url(data) if is_http_url(data) else None
    name = next((s for s in reversed(url[1].split("/")) if s), None) if url else None
    if not name:
        return None
    return require_decoded(decode_uri_component(name), "its attachment URL's file name")


def attachment_filename(part: Any) -> str | None:
    """Return PART's trimmed filename, else the name in its http(s) URL, else None."""
    explicit = get(part, "filename")
    if is_nonblank(explicit):
        return js_trim(explicit)
    return _filename_from_data(coalesce(get(part, "data"), get(part, "image")))


def attachment_mime(part: Any, fallback: str) -> str:
    """Return PART's trimmed MIME type, else the one in its data URL, else FALLBACK."""
    mime = get(part, "mimeType")
    if is_nonblank(mime):
        return js_trim(mime)
    asset = coalesce(get(part, "data"), get(part, "image"))
    if isinstance(asset, str) and asset.startswith("data:"):
        semi, comma = asset.find(";"), asset.find(",")
        end = comma if semi == -1 else min(semi, comma)
        if end > 5:
            return asset[5:end]
    return fallback


def _base64_size(text: str) -> int:
    clean = _JS_WS_RUN.sub("", text)
    padding = 2 if clean.endswith("==") else 1 if clean.endswith("=") else 0
    return max(0, utf16_len(clean) * 3 // 4 - padding)


def source_stats(asset: Any) -> tuple[str, int | None]:
    """Return (`url` | `data-uri` | `binary`, decoded byte size or None) of an attachment's payload ASSET."""
    if isinstance(asset, str):
        if is_http_url(asset):
            return "url", None
        if asset.startswith("data:"):
            comma = asset.find(",")
            return "data-uri", _base64_size("" if comma == -1 else asset[comma + 1:])
        return "binary", _base64_size(asset)
    return "binary", None


def file_descriptor(part: Any) -> str:
    """Return the JSON descriptor (type, mimeType, filename) priced for a file without inline bytes."""
    filename = get(part, "filename")
    inferred = _filename_from_data(get(part, "data"))  # Mastra decodes it even when a filename is given
    return json_stringify({
        "type": "file",
        "mimeType": coalesce(get(part, "mimeType")),
        "filename": js_trim(filename) if is_nonblank(filename) else inferred,
    })


# ------------------------------------------------------------------------------------------ images

def _positive(value: Any) -> Any:
    return value if is_finite(value) and value > 0 else None


def resolve_dimensions(part: Any, stamp: bool) -> tuple[Any, Any]:
    """Return (width, height) in pixels from PART's fields or cached metadata, else measured from inline bytes.

    Either side may be None when unknown. STAMP caches measured sizes in PART as Mastra does.
    """
    dims = get(part_mastra(part), "imageDimensions")
    width = coalesce(_positive(get(part, "width")), _positive(get(part, "imageWidth")),
                     _positive(get(dims, "width")))
    height = coalesce(_positive(get(part, "height")), _positive(get(part, "imageHeight")),
                      _positive(get(dims, "height")))
    if width and height:
        return width, height
    data = decode_image_bytes(coalesce(get(part, "image"), get(part, "data")))
    measured = image_dimensions(data) if data else None
    if not measured:
        return width, height
    resolved = (coalesce(width, measured[0]), coalesce(height, measured[1]))
    if stamp and (meta := ensure_mastra(part, "providerMetadata")) is not None:
        meta["imageDimensions"] = {"width": resolved[0], "height": resolved[1]}
    return resolved


def _image_detail(part: Any) -> str:
    openai_opts = get(get(part, "providerOptions"), "openai")
    openai_meta = get(get(part, "providerMetadata"), "openai")
    detail = coalesce(get(part, "detail"), get(part, "imageDetail"), get(openai_opts, "detail"),
                      get(openai_opts, "imageDetail"), get(openai_meta, "detail"),
                      get(openai_meta, "imageDetail"), get(part_mastra(part), "imageDetail"))
    return detail if detail in ("low", "high") else "auto"


def _google_resolution(part: Any) -> str:
    google_opts = get(get(part, "providerOptions"), "google")
    google_meta = get(get(part, "providerMetadata"), "google")
    for source in (part, google_opts, google_meta, part_mastra(part)):
        value = get(source, "mediaResolution")
        if isinstance(value, str) and value in _GOOGLE_RESOLUTIONS:
            return value
    return "unspecified"


def _openai_config(model_id: str) -> tuple[int, int, int]:
    """(base tokens, tokens per 512px tile, tiles when nothing is known) for an OpenAI-style model."""
    if model_id.startswith("gpt-5"):
        return 70, 140, 4
    if model_id.startswith("gpt-4o-mini"):
        return 2833, 5667, 1
    if model_id.startswith(("o1", "o3")):
        return 75, 150, 4
    if "computer-use" in model_id:
        return 65, 129, 4
    return 85, 170, 4


def _openai_high_tiles(width: Any, height: Any, size: int | None, fallback: int) -> int:
    if width and height:
        w, h = width, height
        if max(w, h) > 2048:
            ratio = 2048 / max(w, h)
            w, h = w * ratio, h * ratio
        if min(w, h) > 768:
            ratio = 768 / min(w, h)
            w, h = w * ratio, h * ratio
        w, h = max(1, js_round(w)), max(1, js_round(h))
        return max(1, math.ceil(w / 512) * math.ceil(h / 512))
    if size is not None:
        return 1 if size <= 512 * 1024 else 4 if size <= 2 * 1024**2 else 6 if size <= 4 * 1024**2 else 8
    return fallback


def _anthropic_image_tokens(width: Any, height: Any, size: int | None) -> int:
    if width and height:
        if max(width, height) > 1568:
            ratio = 1568 / max(width, height)
            width, height = max(1, js_round(width * ratio)), max(1, js_round(height * ratio))
        return max(1, math.ceil(width * height * (1 / 750)))
    if size is not None:
        return 341 if size <= 512 * 1024 else 1366 if size <= 2 * 1024**2 else 2048 if size <= 4 * 1024**2 else 2731
    return 1600


def image_estimate(part: dict, asset: Any, kind: str, provider: str | None, model_id: Any,
                   stamp: bool) -> tuple[int, dict]:
    """Return (tokens, cache payload) of an image ASSET priced for PROVIDER/MODEL_ID (estimateImageAssetTokens)."""
    width, height = resolve_dimensions(part, stamp)
    source, size = source_stats(asset)
    tail = {"width": width, "height": height, "source": source, "sizeBytes": size,
            "mimeType": get(part, "mimeType"), "filename": get(part, "filename")}
    model_lower = model_id.lower() if isinstance(model_id, str) else ""
    if provider == "google":
        gemini3 = model_lower.startswith("gemini-3")
        resolution = _google_resolution(part) if gemini3 else "unspecified"
        tiles = max(1, math.ceil(width / 768) * math.ceil(height / 768)) if width and height else 1
        head = {"kind": kind, "provider": provider, "modelId": model_id,
                "estimator": "google-gemini-3" if gemini3 else "google-legacy", "mediaResolution": resolution}
        return (_GOOGLE_RESOLUTIONS[resolution] if gemini3 else tiles * 258), {**head, **tail}
    if provider == "anthropic":
        head = {"kind": kind, "provider": provider, "modelId": model_id, "estimator": "anthropic"}
        return _anthropic_image_tokens(width, height, size), {**head, **tail}
    base, per_tile, fallback_tiles = _openai_config(model_lower)
    detail = _image_detail(part)
    if detail != "auto":
        effective = detail
    elif width and height:
        effective = "high" if max(width, height) > 768 else "low"
    else:
        effective = "high" if size is not None and size > 1024 * 1024 else "low"
    tiles = _openai_high_tiles(width, height, size, fallback_tiles) if effective == "high" else 0
    head = {"kind": kind, "provider": provider if provider is not None else UNDEFINED, "modelId": model_id,
            "estimator": "openai" if provider == "openai" else "fallback", "detail": detail,
            "effectiveDetail": effective}
    return base + tiles * per_tile, {**head, **tail}


# ------------------------------------------------------------------------------------------- files

def _file_tokens_from_bytes(provider: str | None, mime: str, size: int) -> int:
    normalized = js_trim(mime.lower().split(";", 1)[0])
    if normalized == "application/pdf":
        if provider == "google":
            return max(258, math.ceil(size / 20))
        if provider == "anthropic":
            return max(1500, math.ceil(size / 3))
        return max(500, math.ceil(size / 4))
    return max(1, math.ceil(size / 4))


def file_bytes_estimate(part: dict, provider: str | None, model_id: Any) -> tuple[int, dict] | None:
    """Return (tokens, cache payload) of a non-image file from its inline byte size; None without inline bytes."""
    source, size = source_stats(get(part, "data"))
    if size is None:
        return None
    mime = attachment_mime(part, "application/octet-stream")
    payload = {"kind": "non-image-file", "provider": coalesce(provider, "fallback"),
               "modelId": model_id, "estimator": "bytes", "source": source, "sizeBytes": size,
               "mimeType": mime, "filename": attachment_filename(part)}
    return _file_tokens_from_bytes(provider, mime, size), payload


def remote_payload(part: dict, is_image: bool, provider: str | None, model_id: Any) -> dict:
    """Return what identifies an attachment to a provider's count-tokens endpoint (Mastra's
    buildRemoteAttachmentCachePayload)."""
    asset = coalesce(part.get("image"), part.get("data"))
    source, size = source_stats(asset)
    url = asset if isinstance(asset, str) and _REMOTE_ASSET.match(asset) else None
    digest = sha256_hex(asset) if isinstance(asset, str) and asset and url is None else None
    return {"strategy": "provider-endpoint", "provider": provider, "modelId": model_id,
            "type": coalesce(part.get("type")), "detail": _image_detail(part) if is_image else None,
            "mediaResolution": _google_resolution(part) if provider == "google" and is_image else None,
            "mimeType": attachment_mime(part, "image/png" if is_image else "application/pdf"),
            "filename": attachment_filename(part), "source": source, "sizeBytes": size,
            "assetUrl": url, "assetHash": digest}
