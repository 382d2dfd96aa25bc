"""Byte-level tokenizer: one token per UTF-8 byte, so every string round-trips."""

from __future__ import annotations

from collections.abc import Sequence


class ByteTokenizer:
    vocab_size = 256

    def encode(self, text: str | bytes) -> list[int]:
        """UTF-8 bytes of `text`. Bytes must themselves be valid UTF-8."""
        if isinstance(text, bytes):
            try:
                text.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ValueError(
                    f"the prompt is not valid UTF-8 text (bad byte at position {e.start}); "
                    "send text, or bytes that decode as UTF-8"
                ) from None
            return list(text)
        if not isinstance(text, str):
            raise TypeError(f"a prompt must be text (str), got {type(text).__name__}")
        try:
            return list(text.encode("utf-8"))
        except UnicodeEncodeError as e:
            raise ValueError("the prompt holds a character that is not valid Unicode at position "
                             f"{e.start}") from None

    def decode(self, ids: Sequence[int]) -> str:
        """Text of the bytes; a byte sequence cut mid-character shows U+FFFD for the cut part."""
        # (a list or tuple of ints at once; anything else, a tensor or an array, value by value)
        data = bytes(ids) if isinstance(ids, (list, tuple)) else bytes(int(i) for i in ids)
        return data.decode("utf-8", errors="replace")
