"""The one credential redactor: URL userinfo, secret query values and the bot's own tokens, wherever text leaves."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterable
from typing import Any

_SCHEME = r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://"  # where a word starts: a long word is scanned once
# scheme://user:password@host. People type passwords raw, with spaces, '#', '?' or '@' in them: the password runs to
# the first '@' that a host follows (a dotted name or address, a bracketed IPv6 address with its zone, or one label
# before a port or path; unicode names too), so "p@ss w#1" is masked whole and "...@10.0.0.5 is down, ask
# bob@example.com" keeps its host. A '/' or line break ends the search. The user may be an e-mail address
# (ops@example.com:pw@host: the user runs to the first ':', as URL parsers read it).
# What ends a host: a path, prose, quotes, markdown, a full stop, the next parameter when the URL is one's value.
_HOST_END = r"(?:[/?#&\s\"'<>|),;`*\]]|\.(?:\s|$)|$)"
_HOST_AHEAD = (rf"(?=(?:\[[0-9A-Fa-f:.]+(?:%[\w.-]+)?\]|[\w-]+(?:\.[\w-]+)+)(?::\d+)?{_HOST_END}"
               rf"|[\w-]+:\d+{_HOST_END}|[\w-]+(?:[/?]|$))")  # one label: with a port, or before a path
# host:port, not user:password: "rtsp://cam.local:8554 is down, ask bob@example.com" keeps its port and its prose.
_NOT_A_PORT = r"(?!\d{1,5}(?:[/\s,;)\]>|\"']|$))"
_CRED_IN_URL = re.compile(rf"(?P<scheme>{_SCHEME})(?P<user>[^:/\s]*):{_NOT_A_PORT}(?P<pw>[^/\n]{{1,128}}?)@{_HOST_AHEAD}")
# A raw '/' in the password (rtsp://admin:pa/ss@host), where it can be told from host:port/path: what follows the
# ':' is not a port number, and the password has no space. A password starting "digits/" stays a known gap.
_CRED_WITH_SLASH = re.compile(rf"(?P<scheme>{_SCHEME})(?P<user>[^:/\s]*):{_NOT_A_PORT}(?P<pw>\S{{1,128}}?)@{_HOST_AHEAD}")
# Whatever the rules above leave: user:password@ with no space in the password, any host.
_CRED_IN_URL_PLAIN = re.compile(rf"(?P<scheme>{_SCHEME})(?P<user>[^:/\s]*):(?P<pw>[^/?#\s@]+)@")
# rtsp://TOKEN@host, but not the local part of an e-mail user whose password is masked already.
_TOKEN_IN_URL = re.compile(rf"(?P<scheme>{_SCHEME})(?P<tok>[^:@/\s]+)@(?![^\s/]*?:\*\*\*@)")
# user:password@192.168.1.10 with no scheme, as people paste it from a camera's sticker (the user may be an e-mail
# address); only before an IP address, so e-mail addresses and mailto: links stay as they are.
_BARE_CRED = re.compile(r"(?<![\w/:@.-])(?P<user>[A-Za-z0-9._-]{1,64}(?:@[A-Za-z0-9.-]{1,64})?):(?P<pw>[^\s/@]{1,128})@"
                        r"(?=\d{1,3}(?:\.\d{1,3}){3}\b)")
# key=value secrets in a query, a fragment or a path: ?pwd=, &PassWord=, &-pwd= (INSTAR), #password=, ?auth=<base64>,
# ?X-Amz-Signature=, ?user_password=, and the DVR style /user=admin_password=XXX_channel=1. Any key is read, and
# `_secret_key` decides by its name, so a vendor's own spelling (adminpass, passcode, api-key) is caught without a
# list of every vendor. A value runs to the next &, space or quote, or to the next `_name=` of that path style;
# '#' and '/' stay inside it (a raw '#' in a password, '/' in base64).
# The value is read only after a secret's name (possessively: linear, whatever the text), so a long run of
# "?k=?k=…" in a message costs one pass, not one pass per key.
_KEY = re.compile(r"(?P<pre>(?:^|[?&;/_\s,\"'({#-]))(?P<k>[A-Za-z0-9][A-Za-z0-9_-]{0,39})=")
_VALUE = re.compile(r"(?:[^&\s\"'<>_]++|_(?![A-Za-z]+=))*+")
# Key names (lower case, '-' and '_' dropped) that hold a secret: anywhere in the name, at its end, or the whole name.
_SECRET_ANYWHERE = re.compile(r"passw|passcode|passkey|passphrase|pwd|pswd|psw|loginpas|secret|signature|credential|"
                              r"apikey|authkey|accesskey|privatekey|sessionkey|sessionid|streamkey|devicekey|"
                              r"authorization")
# "…private" is a key pair's secret half (go2rtc's homekit and xiaomi sources: client_private=); `private=true` alone
# is a flag, and `sign=` a request signature (Xiaomi, Tuya, Ezviz).
_SECRET_AT_END = ("pass", "token", "private")
_SECRET_NAMES = frozenset({"pw", "key", "sig", "sign", "auth", "pas", "psk", "jwt", "sid", "session"})
# `p=` is a password only right after a user's key (?u=admin&p=…, ?user=admin&amp;p=…); alone it is a page, a
# probability, a parameter. Read in the few characters before it, so a long run of "&p=" stays linear.
_USER_BEFORE = re.compile(r"(?:^|[?&;#\s-])(?:u|user|usr|username|login|loginuse)=[^&\s=]{0,64}&(?:amp;)?$", re.I)
_USER_WINDOW = 90


def _secret_key(name: str) -> bool:
    """Whether a query, path or JSON key of this name holds a secret (monkey=, keyframe=, max_tokens= do not)."""
    n = name.lower().replace("-", "").replace("_", "")
    return (n in _SECRET_NAMES or (n.endswith(_SECRET_AT_END) and n != "private")
            or bool(_SECRET_ANYWHERE.search(n)))


def _secret_at(text: str, m: re.Match[str]) -> bool:
    if m["k"] in ("p", "P"):
        return bool(_USER_BEFORE.search(text[max(0, m.start("k") - _USER_WINDOW):m.start("k")]))
    return _secret_key(m["k"])


def _mask_key_values(text: str) -> str:
    out, pos = [], 0
    for m in _KEY.finditer(text):
        if m.start() < pos or not _secret_at(text, m):
            continue  # inside a value already masked, or not a secret's name (its value is scanned on)
        end = _VALUE.match(text, m.end()).end()  # type: ignore[union-attr]  # it matches the empty string at least
        if end > m.end():
            out += [text[pos:m.end()], "***"]
            pos = end
    return "".join(out) + text[pos:]


# SRT stream ids carry credentials in two conventions: the access-control form "#!::r=live/cam,u=admin,s=SESSION"
# (s= is the session secret; any key whose name says secret too) and MediaMTX's "action:path:user:password[:query]".
_STREAM_ID = re.compile(r"(?i)(?P<k>\bstreamid=)(?P<v>[^&\s\"'<>]+)")
_STREAM_ID_ACTIONS = ("publish", "read")


def _mask_stream_id(m: re.Match[str]) -> str:
    v = m["v"]
    if v.startswith("#!::"):
        fields = v[4:].split(",")
        for i, field in enumerate(fields):
            key, eq, value = field.partition("=")
            if eq and value and (key.strip().lower() == "s" or _secret_key(key)):
                fields[i] = f"{key}=***"
        return m["k"] + "#!::" + ",".join(fields)
    parts = v.split(":")
    if len(parts) >= 4 and parts[0].lower() in _STREAM_ID_ACTIONS and parts[3]:
        return m["k"] + ":".join(parts[:3] + ["***"])
    return m[0]


# RTMP stream keys are the last path segment, like any stream name: only the shapes services issue are masked
# (YouTube's xxxx-xxxx-xxxx-xxxx[-xxxx], Twitch's live_<digits>_<key>, Facebook's FB-<digits>-<n>-<key>), so
# rtmp://host/live/front-door stays readable. Any other key in the path is a known gap (a ?key= query is not).
_STREAM_KEY = re.compile(
    r"(?i)(?P<pre>rtmp[a-z]?://[^\s/]+/(?:[^\s/?#]+/)*)"  # rtmp, rtmps, rtmpt, rtmpe
    r"(?P<key>[a-z0-9]{4}(?:-[a-z0-9]{4}){3,4}|live_\d{5,}_[a-z0-9]{16,}|fb-\d{6,}-\d+-[a-z0-9_-]{8,})(?![\w-])")


# Header and JSON forms: "x-api-key: ...", "Authorization: Basic ...", {"password": "..."}.
_CRED_IN_HEADER = re.compile(
    r"(?i)(?P<k>\b(?:x-api-key|api-key|x-auth-token|authorization|proxy-authorization)\s*:\s*)"
    r"(?P<kind>(?:basic|bearer|digest|token)\s+)?(?P<v>[^\s,;\"']+)"
)
_CRED_IN_JSON = re.compile(r"(?P<k>[\"'](?P<name>[A-Za-z0-9_-]{1,40})[\"']\s*:\s*[\"'])(?P<v>[^\"']*)(?=[\"'])")
# A config line holding one value under a secret's name (Home Assistant's secrets.yaml "cam_password: hunter2", an
# .env line "password: x"): the whole line, so "password: please reset it" in a sentence stays as written.
_CRED_IN_CONFIG_LINE = re.compile(r"(?m)^(?P<k>[ \t]*(?:-[ \t]*)?(?P<name>[A-Za-z0-9_.-]{1,40})[ \t]*:[ \t]+)"
                                  r"(?P<v>\"[^\"\n]*\"|'[^'\n]*'|[^\s\"'#*][^\s]{0,200})(?P<end>[ \t]*)$")
# An XML element named as a secret: ONVIF's <wsse:Password Type="…">pw</wsse:Password>, <password>pw</password>.
_CRED_IN_XML = re.compile(r"(?P<open><(?P<tag>(?:[\w.-]{1,40}:)?(?P<name>[\w.-]{1,40}))(?:\s[^<>]{0,300})?>)"
                          r"(?P<v>[^<]{1,300})(?P<close></(?P=tag)\s*>)")
# curl's -u/--user user:password (and --proxy-user), as people paste a snapshot command; not docker's -u 1000:1000.
_CRED_IN_CLI = re.compile(r"(?<![\w-])(?P<k>(?:-u|--user|--proxy-user|-U)(?:[ \t]+|=)[\"']?)(?!\d+:\d+(?:[\s\"']|$))"
                          r"(?P<user>[^\s:\"'@/]{1,64}):(?P<pw>[^\s\"'/][^\s\"']{0,127})")  # not rsync -u host:/path
# Slack bot/app/user tokens and Anthropic keys, whoever's they are: their shape alone says they are secrets.
_TOKEN_SHAPE = re.compile(r"\b(?P<kind>xox[abposr]|xapp|sk-ant)-[A-Za-z0-9_-]+")
# The bot's own secrets, named by their env vars: their literal values are masked even where no shape matches.
SECRET_ENV = ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "ANTHROPIC_API_KEY", "ROBOFLOW_API_KEY")
# Where redact() leaves its *** (after user:, //, key=, xoxb-): renderers keep these from becoming emphasis markup.
MASKS = re.compile(r"(?<=[:/=-])\*\*\*")
_MIN_SECRET = 8  # shorter "secrets" are test placeholders; masking them would garble ordinary words
_secrets: set[str] = set()


def add_secrets(values: Iterable[str | None]) -> None:
    """Also mask these literal values (the composition root adds the secrets Settings loaded)."""
    _secrets.update(v.strip() for v in values if v and len(v.strip()) >= _MIN_SECRET)


def _secret_values() -> list[str]:
    found = set(_secrets)
    found.update(v.strip() for n in SECRET_ENV if len((v := os.environ.get(n) or "").strip()) >= _MIN_SECRET)
    return sorted(found, key=len, reverse=True)  # longest first: a secret containing another is masked whole


def _redact_plain(text: str) -> str:
    """Every rule, on the text as it stands (no decoding)."""
    for secret in _secret_values():
        text = text.replace(secret, "***")
    text = _CRED_IN_URL.sub(lambda m: f"{m['scheme']}{m['user']}:***@", text)
    text = _CRED_WITH_SLASH.sub(lambda m: f"{m['scheme']}{m['user']}:***@", text)
    text = _CRED_IN_URL_PLAIN.sub(lambda m: f"{m['scheme']}{m['user']}:***@", text)
    text = _TOKEN_IN_URL.sub(lambda m: f"{m['scheme']}***@", text)
    text = _BARE_CRED.sub(lambda m: f"{m['user']}:***@", text)
    text = _TOKEN_SHAPE.sub(lambda m: f"{m['kind']}-***", text)
    text = _CRED_IN_HEADER.sub(lambda m: f"{m['k']}{m['kind'] or ''}***", text)
    text = _CRED_IN_JSON.sub(lambda m: f"{m['k']}***" if m["v"] and _secret_key(m["name"]) else m[0], text)
    text = _CRED_IN_CONFIG_LINE.sub(
        lambda m: f"{m['k']}***{m['end']}" if _secret_key(m["name"].rsplit(".", 1)[-1]) and m["v"] != "***" else m[0],
        text)
    text = _CRED_IN_XML.sub(
        lambda m: f"{m['open']}***{m['close']}" if _secret_key(m["name"]) and m["v"] != "***" else m[0], text)
    text = _CRED_IN_CLI.sub(lambda m: f"{m['k']}{m['user']}:***" if m["pw"] != "***" else m[0], text)
    text = _STREAM_ID.sub(_mask_stream_id, text)
    text = _STREAM_KEY.sub(lambda m: f"{m['pre']}***", text)
    return _mask_key_values(text)


# Escapes that can hide a URL's parts from the rules: percent-encoding (go2rtc's src=rtsp%3A%2F%2Fadmin%3Apw%40…,
# and twice: %253A), JSON (\/ \" \\ \u0040) and HTML (&amp; &#64; &#x40; &commat;).
_ESCAPED = re.compile(r"%[0-9A-Fa-f]{2}|\\[/\"\\uU]|&#?[A-Za-z0-9]{1,8};")
_HEX = frozenset("0123456789abcdefABCDEF")
_ESCAPE_STARTS = frozenset("%&\\")
_ESCAPE_START = re.compile(r"[%&\\]")
_ENTITY = re.compile(r"&(?:#(?P<dec>\d{1,7})|#[xX](?P<hex>[0-9A-Fa-f]{1,6})|(?P<name>[A-Za-z]{2,6}));\Z")
_ENTITY_NAMES = {"amp": "&", "quot": '"', "apos": "'", "lt": "<", "gt": ">", "sol": "/", "colon": ":", "commat": "@",
                 "num": "#", "percnt": "%", "equals": "=", "quest": "?"}
_ENTITY_LONGEST = 10  # &#1114111;
_BYTE = re.compile("[\udc80-\udcff]")  # a percent-encoded byte that is not part of valid UTF-8


def _reduce(out: list[str]) -> None:
    """Undo the escape that ends `out`, if one does, and again while the result ends in one (%25 41 -> %41 -> A)."""
    while True:
        c = out[-1]
        if c in _HEX and len(out) >= 3 and out[-3] == "%" and out[-2] in _HEX:
            b = int(out[-2] + c, 16)
            del out[-3:]
            out.append(chr(b) if b < 0x80 else chr(0xDC00 + b))  # bytes >= 0x80: UTF-8 is put together at the end
        elif len(out) >= 2 and out[-2] == "\\" and c in '/"\\':
            del out[-2:]
            out.append(c)
        elif c in _HEX and len(out) >= 6 and out[-6] == "\\" and out[-5] in "uU" and all(h in _HEX for h in out[-4:-1]):
            code = int("".join(out[-4:]), 16)
            if 0xD800 <= code <= 0xDFFF:
                return  # half a surrogate pair: left as written
            del out[-6:]
            out.append(chr(code))
        elif c == ";" and "&" in out[-_ENTITY_LONGEST:]:
            start = len(out) - _ENTITY_LONGEST + "".join(out[-_ENTITY_LONGEST:]).rindex("&")
            m = _ENTITY.match("".join(out[max(start, 0):]))
            if m is None:
                return
            if m["name"] is not None:
                value = _ENTITY_NAMES.get(m["name"].lower())
            else:
                code = int(m["dec"], 10) if m["dec"] is not None else int(m["hex"], 16)
                value = chr(code) if code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else None
            if value is None:
                return
            del out[max(start, 0):]
            out.append(value)
        else:
            return


def _decode(text: str) -> str:
    """`text` percent-, JSON- and HTML-unescaped until nothing is left to unescape, in one pass: each undone escape
    shortens the text, so a hostile run of %25%25… or &amp;amp;… costs linear time, not one pass per layer."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if not _ESCAPE_STARTS.intersection(out[-_ENTITY_LONGEST:]):  # nothing pending: copy up to the next escape
            j = m.start() if (m := _ESCAPE_START.search(text, i)) else n
            out.extend(text[i:j])
            i = j
            if i >= n:
                break
        out.append(text[i])
        i += 1
        _reduce(out)
    decoded = "".join(out)
    if not _BYTE.search(decoded):
        return decoded
    try:  # percent-encoded UTF-8 (kamera.m%C3%BCnchen.de) becomes its characters; other bytes stay %XX
        decoded = decoded.encode("utf-8", "surrogateescape").decode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        pass
    return _BYTE.sub(lambda m: f"%{ord(m[0]) - 0xDC00:02X}", decoded)


def _redact_escaped(text: str) -> str:
    """Mask what the rules see only once `text` is unescaped. Only a word that hid a secret is shown unescaped (the
    rest stays as written); a secret that spans words once unescaped (a spaced password in a JSON string) unescapes
    the whole text."""
    decoded = _decode(text)
    if _redact_plain(decoded) == decoded:
        return text  # the escapes hid nothing (Slack's &amp;, a %20 in a path)
    words = []
    for word in re.split(r"(\s+)", text):
        if _ESCAPED.search(word):
            plain = _decode(word)
            masked = _redact_plain(plain)
            if masked != plain:
                word = masked
        words.append(word)
    text = "".join(words)
    decoded = _decode(text)
    masked = _redact_plain(decoded)
    return text if masked == decoded else masked


def redact(text: str) -> str:
    """Mask credentials in `text`, in every form cameras and services put them: rtsp://user:***@host (a password
    with spaces, '#', '@', ':' or a '/' included; an e-mail address as the user), rtsp://***@host (a bare token),
    user:***@10.0.0.5, ?pwd=*** / &loginpas=*** / ?auth=*** / ?sig=*** / ?key=*** / ?u=admin&p=*** and the like,
    /user=admin_password=***_channel=1, SRT stream ids (s=***, read:path:user:***), RTMP stream keys of YouTube,
    Twitch and Facebook, "x-api-key: ***", "Authorization: Basic ***", {"password": "***"}, xoxb-*** / xapp-*** /
    sk-ant-*** tokens, and the literal values of the bot's own secrets; the same behind percent-encoding (once or
    more: go2rtc's src=rtsp%3A%2F%2F…), JSON escapes (rtsp:\\/\\/…) and HTML entities (&amp;). A word that hid a
    secret is shown unescaped, its scheme and host readable. Idempotent: masking masked text changes nothing."""
    if not text:
        return text
    text = _redact_plain(text)
    return _redact_escaped(text) if _ESCAPED.search(text) else text


def _mask_record(record: logging.LogRecord) -> None:
    try:
        message = record.getMessage()
    except Exception:  # a broken format string is the logger's problem, not ours
        return
    masked = redact(message)
    if masked != message:
        record.msg, record.args = masked, None
    if record.exc_info and not record.exc_text:
        # An exception's text often carries the URL it failed on; format it here so the handler prints ours.
        record.exc_text = redact(logging.Formatter().formatException(record.exc_info))


class RedactingFilter(logging.Filter):
    """A handler filter that masks credentials in every record it passes (message, args and traceback)."""

    def filter(self, record: logging.LogRecord) -> bool:
        _mask_record(record)
        return True


class _RedactingRecords:
    """A log record factory masking each record as it is made, whichever handler later prints it."""

    def __init__(self, base: Callable[..., logging.LogRecord]) -> None:
        self.base = base

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record = self.base(*args, **kwargs)
        _mask_record(record)
        return record


def install_log_redaction(logger: logging.Logger | None = None) -> None:
    """Mask credentials in every log record; idempotent.

    A RedactingFilter goes on every handler of `logger` (default: root): on handlers, because a logger's own filters
    never see records propagated from child loggers. The record factory covers libraries that log through their own
    handlers with propagation off (`inference` does, and it logs video source URLs).
    """
    current = logging.getLogRecordFactory()
    if not isinstance(current, _RedactingRecords):
        logging.setLogRecordFactory(_RedactingRecords(current))
    for handler in (logger or logging.getLogger()).handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
