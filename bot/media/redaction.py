"""The one credential redactor: URL userinfo, secret query values and the bot's own tokens, wherever text leaves."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterable
from typing import Any

from bot.long_texts import once_per_long_text

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
# list of every vendor. A value runs to the next &, space or quote, or to the next `_name=` of that path style or
# `;Name=` of a connection string (Azure's AccountName=…;AccountKey=…;EndpointSuffix=…); '#', '/' and a ';' before
# anything else stay inside it (a raw '#' in a password, '/' in base64).
# The value is read only after a secret's name (possessively: linear, whatever the text), so a long run of
# "?k=?k=…" in a message costs one pass, not one pass per key. A few spaces may stand around the '='
# (`password = x` in a sentence or an .ini file), a '~' before the name (Akamai's `exp=…~hmac=…`) and a '.' (Axis
# VAPIX's dotted parameters, root.Network.SMTP.Password=…). A value opening with a bracket or a call, then a quote,
# is code (Python's auth=("user", "pw"), auth=HTTPDigestAuth("user", "pw"): `_CRED_IN_CALL`), not a value to read
# here; a password such as "abc(123)" or "(secret)" is one.
_CODE = r"(?:[(\[{]|[A-Za-z_][\w.]{0,60}\()[ \t]*\\{0,7}[\"']"  # ("…  [\"…  HTTPDigestAuth("…, escaped or not
_KEY = re.compile(r"(?:^|(?<=[?&;/_\s,\"'({#~=.-]))(?P<k>[A-Za-z0-9][A-Za-z0-9_-]{0,39})[ \t]{0,3}=(?!=)[ \t]{0,3}"
                  r"(?!" + _CODE + ")")
_VALUE = re.compile(r"(?:[^&\s\"'<>_;\\]++|\\(?![\\\"'])|[_;](?![A-Za-z][A-Za-z0-9-]*=))*+")  # not \" (a quote)
# Key names (lower case, '-' and '_' dropped) that hold a secret: anywhere in the name, at its end, or the whole name.
_SECRET_ANYWHERE = re.compile(r"passw|passcode|passkey|passphrase|pwd|pswd|psw|loginpas|secret|signature|credential|"
                              r"apikey|authkey|accesskey|privatekey|sessionkey|sessionid|streamkey|devicekey|"
                              r"authorization|authsign|hmac|accountkey|sharedkey|masterkey|signingkey|"
                              r"subscriptionkey|encryptionkey")
# "…private" is a key pair's secret half (go2rtc's homekit and xiaomi sources: client_private=); `private=true` alone
# is a flag, and `sign=` a request signature (Xiaomi, Tuya, Ezviz). Signed links of streaming CDNs: nginx's
# secure_link `md5=`, Wowza's `wmsAuthSign=`, Akamai's `hdnts=`/`__hdnea__=` (the whole exp=…~acl=…~hmac=… value),
# `hmac=`, googlevideo's `sig=`/`lsig=`. "…pw" is a password (GStreamer's user-pw=, proxy-pw=); a cookie is a session
# (`{"Cookie": "…"}`; the header: `_COOKIE`); Azure's AccountKey=, SharedKey, a master or signing key are keys.
_SECRET_AT_END = ("pass", "token", "private", "pw")
_SECRET_NAMES = frozenset({"pw", "key", "sig", "lsig", "sign", "auth", "pas", "psk", "jwt", "sid", "session", "md5",
                           "hdnts", "hdnea", "cookie", "setcookie"})
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


# The same names as a path segment before the value (googlevideo's /expire/1700000000/sig/<value>/file/…): only a
# secret's whole name (not "bypass") before a value shaped as a token (8 or more letters and digits, both), so
# /api/token/refresh and /key/IMG_0001.jpg stay as written.
_PATH_SECRET = re.compile(r"(?<=/)(?P<name>[A-Za-z][A-Za-z0-9_-]{0,39})/(?=(?P<v>[A-Za-z0-9_~+=%-]{8,512})"
                          r"(?:[/?#&\s\"'<>|),;`\]]|$))")


def _mask_path_values(text: str) -> str:
    out, pos = [], 0
    for m in _PATH_SECRET.finditer(text):  # a name is read, its value looked at ahead: the value may be a name too
        if m.start() < pos:
            continue
        n, v = m["name"].lower().replace("-", "").replace("_", ""), m["v"]
        if ((n in _SECRET_NAMES or n in _SECRET_AT_END or _SECRET_ANYWHERE.search(n))
                and any(c.isdigit() for c in v) and any(c.isalpha() for c in v)):
            out += [text[pos:m.end()], "***"]
            pos = m.end() + len(v)
    return "".join(out) + text[pos:]


# A raw space inside a query value, as people type a password into a URL (?pwd=my pass&chn=1, a form body's
# password=pass word&client_id=…): the value runs on over a few words when the next parameter follows them at once.
_SPACED_VALUE = re.compile(r"(?:[ \t][^&\s\"'<>=]{1,64}){1,4}(?=&[A-Za-z][\w.-]{0,39}=)")


def _mask_key_values(text: str) -> str:
    out, pos = [], 0
    for m in _KEY.finditer(text):
        if m.start() < pos or not _secret_at(text, m):
            continue  # inside a value already masked, or not a secret's name (its value is scanned on)
        end = _VALUE.match(text, m.end()).end()  # type: ignore[union-attr]  # it matches the empty string at least
        if end > m.end() and (spaced := _SPACED_VALUE.match(text, end)):
            end = spaced.end()
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
# An HTTP Digest header names who and where (username, realm, nonce, uri, cnonce: all sent in the clear, none tells
# the password); its `response` is the hash of the password with them, which a dictionary attack is run on offline:
# that alone is masked (the hex of MD5, SHA-256 or SHA-512/256), the rest stays readable.
_CRED_IN_HEADER = re.compile(
    r"(?i)(?P<k>\b(?:x-api-key|api-key|x-auth-token|authorization|proxy-authorization)\s*:\s*)(?!digest\s)"
    r"(?P<kind>(?:basic|bearer|token)\s+)?(?P<v>[^\s,;\"']+)"
)
# A Cookie header's values are sessions whatever their names (UniFi's unifises=, PHPSESSID=, connect.sid=): each is
# masked, the names stay; a Set-Cookie's first pair (the rest are its attributes: Path=/, Expires=…).
_COOKIE = re.compile(r"(?im)(?P<k>\b(?P<set>set-)?cookie[ \t]*:[ \t]*)(?P<v>[^\r\n\"'<>]{1,4000})")
_COOKIE_PAIR = re.compile(r"(?P<k>(?:^|;)[ \t]*[^=;\s]{1,80}=)(?P<v>[^;]*)")


def _mask_cookies(m: re.Match[str]) -> str:
    masked = _COOKIE_PAIR.sub(lambda p: f"{p['k']}***" if p["v"].strip() not in ("", "***") else p[0], m["v"],
                              count=1 if m["set"] else 0)
    return m["k"] + masked


# Credentials given to an HTTP library in code, as people paste it: requests' auth=("user", "pw") and
# HTTPDigestAuth("user", "pw"), aiohttp's and httpx's BasicAuth / DigestAuth; the user stays.
_CRED_IN_CALL = re.compile(
    r"(?P<k>(?:\b(?:proxy_)?auth[ \t]*=[ \t]*[(\[]"
    r"|\b(?:HTTPBasicAuth|HTTPDigestAuth|HTTPProxyAuth|BasicAuth|DigestAuth)\((?:[ \t]*(?:login|username)[ \t]*=)?)"
    r"[ \t]*(?P<uq>[\"'])[^\"'\n]{0,64}(?P=uq)[ \t]*,[ \t]*(?:password[ \t]*=[ \t]*)?(?P<q>[\"']))"
    r"(?P<pw>(?:\\.|(?!(?P=q))[^\\\n]){1,128})(?P=q)")
_DIGEST_RESPONSE = re.compile(r"(?i)(?P<k>(?<![\w-])response[ \t]*=[ \t]*\"?)(?P<v>[0-9a-f]{32,128})(?![0-9a-z])")
# A quoted value under a secret's name, whole: a JSON or Python string ({"password": "pa\"ss"}, at any depth of JSON
# in JSON: {\"password\": \"pa\\\"ss\"}), an XML or HTML attribute (<camera password="…"/>), a shell's
# PASSWORD="pass word", wget's --password='…'. Its closing quote has as many backslashes before it as the opening one
# (more: a quote inside the value), and where unescaping lost them (a value read decoded), the first quote that
# JSON or markup could follow ends it: "pa"ss" is one value.
_JSON_KEY = re.compile(r"(?<!\\)(?P<e>\\{0,7})(?P<q1>[\"'])(?P<name>[A-Za-z0-9_-]{1,40})(?P=e)(?P=q1)"
                       r"\s{0,8}:\s{0,8}(?P=e)(?P<q>[\"'])")
_JSON_AFTER = re.compile(r"[ \t]*(?:[,}\]\r\n]|\Z)")
_ATTR_KEY = re.compile(r"(?<![\w.:])(?P<name>[A-Za-z_][\w.:-]{0,39})[ \t]*=[ \t]*(?P<e>\\{0,7})(?P<q>[\"'])")
_ATTR_AFTER = re.compile(r"(?:[\s/>,;)&]|\Z)")
_QUOTED_MAX = 300


def _closing_quote(text: str, i: int, q: str, escapes: int, after: re.Pattern[str]) -> int:
    """Where the value opened at `i` ends (the start of its closing quote's backslashes), or -1: not on this line."""
    first, j = -1, i
    stop = text.find("\n", i)
    stop = min(len(text) if stop < 0 else stop, i + _QUOTED_MAX)
    while (j := text.find(q, j, stop)) >= 0:
        b = 0
        while j - b - 1 >= i and text[j - b - 1] == "\\":
            b += 1
        if b < escapes:
            break  # a quote of an outer layer: the value ended before it
        if b == escapes or (escapes == 0 and b % 2 == 0):  # a backslash escaped, not the quote
            if after.match(text, j + 1):
                return j - b
            if first < 0:
                first = j - b
        j += 1
    return first


def _mask_quoted(text: str, key: re.Pattern[str], after: re.Pattern[str]) -> str:
    """Each quoted value `key` opens under a secret's name, masked whole (one pass: a value is read once)."""
    out, pos = [], 0
    for m in key.finditer(text):
        if m.start() < pos or not _secret_key(m["name"].rsplit(":", 1)[-1]):
            continue  # inside a value masked already, or not a secret's name (its value is read on: JSON in JSON)
        end = _closing_quote(text, m.end(), m["q"], len(m["e"]), after)
        if end > m.end() and text[m.end():end] != "***":
            out += [text[pos:m.end()], "***"]
            pos = end
    return "".join(out) + text[pos:]


# An .ini or .env line `password = pass word`: the rest of the line is the value (spaces included).
# (A bracket or a call is code: `_CRED_IN_CALL`'s.)
_CRED_IN_INI_LINE = re.compile(r"(?m)^(?P<k>[ \t]*(?P<name>[A-Za-z0-9_.-]{1,40})[ \t]*=(?!=)[ \t]*)"
                               r"(?!" + _CODE + r")(?P<v>[^\s\"'](?:[^\n]{0,298}[^\s])?)(?P<end>[ \t]*)$")
# A config line holding one value under a secret's name (Home Assistant's secrets.yaml "cam_password: hunter2", an
# .env line "password: x"): the whole line, so "password: please reset it" in a sentence stays as written.
_CRED_IN_CONFIG_LINE = re.compile(r"(?m)^(?P<k>[ \t]*(?:-[ \t]*)?(?P<name>[A-Za-z0-9_.-]{1,40})[ \t]*:[ \t]+)"
                                  r"(?P<v>\"[^\"\n]*\"|'[^'\n]*'|[^\s\"'#*][^\s]{0,200})(?P<end>[ \t]*)$")
# An XML element named as a secret: ONVIF's <wsse:Password Type="…">pw</wsse:Password>, <password>pw</password>.
_CRED_IN_XML = re.compile(r"(?P<open><(?P<tag>(?:[\w.-]{1,40}:)?(?P<name>[\w.-]{1,40}))(?:\s[^<>]{0,300})?>)"
                          r"(?P<v>[^<]{1,300})(?P<close></(?P=tag)\s*>)")
# curl's -u/--user user:password (and --proxy-user), as people paste a snapshot command; not docker's -u 1000:1000.
# Quoted ('admin:pass word'), the password runs to the closing quote.
_CRED_IN_CLI = re.compile(r"(?<![\w-])(?P<k>(?:-u|--user|--proxy-user|-U)(?:[ \t]+|=)(?P<q>[\"'])?)"
                          r"(?!\d+:\d+(?:[\s\"']|$))(?P<user>[^\s:\"'@/]{1,64}):"
                          r"(?P<pw>(?(q)(?:(?!(?P=q))[^\n]){1,128}|[^\s\"'/][^\s\"']{0,127}))")  # not rsync host:/path
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
    text = _DIGEST_RESPONSE.sub(lambda m: f"{m['k']}***", text)
    text = _COOKIE.sub(_mask_cookies, text)
    text = _CRED_IN_CALL.sub(lambda m: f"{m['k']}***{m['q']}" if m["pw"] != "***" else m[0], text)
    text = _mask_quoted(text, _JSON_KEY, _JSON_AFTER)
    text = _mask_quoted(text, _ATTR_KEY, _ATTR_AFTER)
    text = _CRED_IN_INI_LINE.sub(
        lambda m: f"{m['k']}***{m['end']}" if _secret_key(m["name"].rsplit(".", 1)[-1]) and m["v"] != "***" else m[0],
        text)
    text = _CRED_IN_CONFIG_LINE.sub(
        lambda m: f"{m['k']}***{m['end']}" if _secret_key(m["name"].rsplit(".", 1)[-1]) and m["v"] != "***" else m[0],
        text)
    text = _CRED_IN_XML.sub(
        lambda m: f"{m['open']}***{m['close']}" if _secret_key(m["name"]) and m["v"] != "***" else m[0], text)
    text = _CRED_IN_CLI.sub(lambda m: f"{m['k']}{m['user']}:***" if m["pw"] != "***" else m[0], text)
    text = _STREAM_ID.sub(_mask_stream_id, text)
    text = _STREAM_KEY.sub(lambda m: f"{m['pre']}***", text)
    text = _mask_path_values(text)
    return _mask_key_values(text)


# Escapes that can hide a URL's parts from the rules: percent-encoding (go2rtc's src=rtsp%3A%2F%2Fadmin%3Apw%40…,
# and twice: %253A), JSON (\/ \" \\ \u0040), Python's and C's (\x40, \U00000040) and HTML (&amp; &#64; &#x40;
# &commat;, and the same without their ';', as browsers read them: &commat, &#64, &#x40).
_ENTITY_NAMES = {"amp": "&", "quot": '"', "apos": "'", "lt": "<", "gt": ">", "sol": "/", "colon": ":", "commat": "@",
                 "num": "#", "percnt": "%", "equals": "=", "quest": "?"}
_ESCAPED = re.compile(r"%[0-9A-Fa-f]{2}|\\[/\"\\uUnrt]|\\x[0-9A-Fa-f]{2}|&#?[A-Za-z0-9]{1,8};|&#[xX]?[0-9A-Fa-f]|"
                      r"&(?i:" + "|".join(_ENTITY_NAMES) + ")")
_SIMPLE_ESCAPES = {"/": "/", '"': '"', "\\": "\\", "n": "\n", "r": "\r", "t": "\t"}  # JSON's, as Python's
_HEX = frozenset("0123456789abcdefABCDEF")
_DIGITS = frozenset("0123456789")
_ESCAPE_STARTS = frozenset("%&\\")
_ESCAPE_START = re.compile(r"[%&\\]")
_ENTITY = re.compile(r"&(?:#(?P<dec>\d{1,7})|#[xX](?P<hex>[0-9A-Fa-f]{1,6})|(?P<name>[A-Za-z]{2,6}));\Z")
_ENTITY_LONGEST = 10  # &#1114111;
# An entity without its ';' (&commat, &#64, &#x40), read once the next character shows it ended: a name of ours, or
# a number read as the printable ASCII character its first digits make (&#6410.0.0.1 is "@10.0.0.1" to a reader).
_LOOSE_ENTITY = re.compile(r"&(?:#(?P<dec>\d{1,7})|#[xX](?P<hex>[0-9A-Fa-f]{1,6})|(?P<name>[A-Za-z]{2,6}))\Z")
_BYTE = re.compile("[\udc80-\udcff]")  # a percent-encoded byte that is not part of valid UTF-8


def _last_amp(out: list[str]) -> int:
    """Where in `out` the last '&' of its tail stands (-1: none in the last _ENTITY_LONGEST characters)."""
    tail = "".join(out[-_ENTITY_LONGEST:])
    at = tail.rfind("&")
    return -1 if at < 0 else len(out) - len(tail) + at


def _byte(b: int) -> str:
    return chr(b) if b < 0x80 else chr(0xDC00 + b)  # bytes >= 0x80: UTF-8 is put together at the end


def _reduce(out: list[str]) -> None:
    """Undo the escape that ends `out`, if one does, and again while the result ends in one (%25 41 -> %41 -> A)."""
    while True:
        c = out[-1]
        if c in _HEX and len(out) >= 3 and out[-3] == "%" and out[-2] in _HEX:
            b = int(out[-2] + c, 16)
            del out[-3:]
            out.append(_byte(b))
        elif c in _HEX and len(out) >= 4 and out[-4] == "\\" and out[-3] == "x" and out[-2] in _HEX:
            b = int(out[-2] + c, 16)
            del out[-4:]
            out.append(_byte(b))
        elif len(out) >= 2 and out[-2] == "\\" and c in _SIMPLE_ESCAPES:
            del out[-2:]
            out.append(_SIMPLE_ESCAPES[c])
        elif c in _HEX and (digits := _code_point_digits(out)):
            if not _code_point(out, digits):
                return
        elif c == ";" and (start := _last_amp(out)) >= 0:
            m = _ENTITY.match("".join(out[start:]))
            if m is None:
                return
            if m["name"] is not None:
                value = _ENTITY_NAMES.get(m["name"].lower())
            else:
                code = int(m["dec"], 10) if m["dec"] is not None else int(m["hex"], 16)
                value = chr(code) if code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else None
            if value is None:
                return
            del out[start:]
            out.append(value)
        else:
            return


def _code_point_digits(out: list[str]) -> int:
    """4 if `out` ends in \\uXXXX, 8 if in \\UXXXXXXXX (Python's), else 0."""
    for digits, letter in ((4, "u"), (8, "U")):
        if len(out) > digits + 1 and out[-digits - 2] == "\\" and out[-digits - 1] == letter \
                and all(h in _HEX for h in out[-digits:]):
            return digits
    return 0


def _code_point(out: list[str], digits: int) -> bool:
    """Replace the \\uXXXX (digits=4) or \\UXXXXXXXX (8) ending `out` with its character; False: not one."""
    code = int("".join(out[-digits:]), 16)
    if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
        return False  # half a surrogate pair, or no character at all: left as written
    del out[-digits - 2:]
    out.append(chr(code))
    return True


def _settle(out: list[str], nxt: str | None) -> None:
    """Before `nxt` (None: the end) is added: read an entity ending `out` without its ';' if `nxt` ends it."""
    if nxt == ";" or (start := _last_amp(out)) < 0:
        return
    m = _LOOSE_ENTITY.match("".join(out[start:]))
    if m is None:
        return
    if m["name"] is not None:  # no name of ours begins another, so a whole one has ended
        if (value := _ENTITY_NAMES.get(m["name"].lower())) is None:
            return
        rest = ""
    else:
        digits, base = (m["dec"], 10) if m["dec"] is not None else (m["hex"], 16)
        if nxt is not None and nxt in (_DIGITS if base == 10 else _HEX) and len(digits) < (7 if base == 10 else 6):
            return  # still being written
        for k in range(min(len(digits), 3 if base == 10 else 2), 0, -1):
            if 0x20 <= (code := int(digits[:k], base)) < 0x7F:
                value, rest = chr(code), digits[k:]
                break
        else:
            return
    del out[start:]
    for ch in value + rest:
        out.append(ch)
        _reduce(out)


def _decode(text: str) -> str:
    """`text` percent-, JSON-, C- and HTML-unescaped until nothing is left to unescape, in one pass: each undone
    escape shortens the text, so a hostile run of %25%25… or &amp;amp;… costs linear time, not one pass per
    layer."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if not _ESCAPE_STARTS.intersection(out[-_ENTITY_LONGEST:]):  # nothing pending: copy up to the next escape
            j = m.start() if (m := _ESCAPE_START.search(text, i)) else n
            out.extend(text[i:j])
            i = j
            if i >= n:
                break
        _settle(out, text[i])
        out.append(text[i])
        i += 1
        _reduce(out)
    if out:
        _settle(out, None)
    decoded = "".join(out)
    if not _BYTE.search(decoded):
        return decoded
    try:  # percent-encoded UTF-8 (kamera.m%C3%BCnchen.de) becomes its characters; other bytes stay %XX
        decoded = decoded.encode("utf-8", "surrogateescape").decode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        pass
    return _BYTE.sub(lambda m: f"%{ord(m[0]) - 0xDC00:02X}", decoded)


_SPACE_HELD = "\ue000"  # a space unescaping made inside one word: part of a value there, not a break between words


def _redact_word(plain: str) -> str:
    """One word as unescaped. Its spaces were escaped (pwd%3Dmy%2520pass inside go2rtc's src=), so a value is read
    across them first; then with them, for the rules that read lines and spaces (an .ini line encoded whole)."""
    if " " in plain and _SPACE_HELD not in plain:
        plain = _redact_plain(plain.replace(" ", _SPACE_HELD)).replace(_SPACE_HELD, " ")
    return _redact_plain(plain)


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
            masked = _redact_word(plain)
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
    signed CDN links (?md5=*** / ?wmsAuthSign=*** / ?hdnts=*** / ?hmac=*** / /sig/***/),
    /user=admin_password=***_channel=1, SRT stream ids (s=***, read:path:user:***), RTMP stream keys of YouTube,
    Twitch and Facebook, "x-api-key: ***", "Authorization: Basic ***", Digest's response="***",
    {"password": "***"} (escaped quotes and all), password="***" attributes, `password = ***` lines,
    curl -u 'user:***', xoxb-*** / xapp-*** / sk-ant-*** tokens, and the literal values of the bot's own secrets;
    the same behind percent-encoding (once or more: go2rtc's src=rtsp%3A%2F%2F…), JSON and Python escapes
    (rtsp:\\/\\/…, \\u0040, \\x40) and HTML entities (&amp;, &#64 with or without its ';'). A word that hid a
    secret is shown unescaped, its scheme and host readable. Idempotent: masking masked text changes nothing."""
    if not text:
        return text
    return _redact(text)


# A long text is masked once per set of secrets (the workspace files, every turn). The secrets are in the key: one
# added later (add_secrets, the environment) is masked in a text masked before it.
@once_per_long_text(key=lambda: tuple(_secret_values()))
def _redact(text: str) -> str:
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
