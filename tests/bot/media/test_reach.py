"""Network reach as a hostile user tries it: loopback/private/link-local stream and image URLs, a camera host's other
ports and schemes, redirects into the LAN, and DNS that answers differently the second time."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from bot.agent.tools import ToolContext
from bot.config import load_settings
from bot.media.reach import origin, with_host
from bot.media.resolve import MediaError, resolve_image, resolve_video
from tests.fixtures.media import PortWatch, register_cameras

PUBLIC = "93.184.215.14"  # a public address; nothing here ever reaches it (the sandbox has no route)


@pytest.fixture
def ctx(settings) -> ToolContext:
    return ToolContext(settings=settings)


@pytest.mark.parametrize("template", [
    "rtsp://127.0.0.1:{port}/live", "rtsp://admin:pw@localhost:{port}/live", "rtmp://127.0.0.1:{port}/app",
    "http://127.0.0.1:{port}/mjpeg", "https://127.0.0.1:{port}/v.mp4", "rtsp://[::1]:{port}/live",
    "rtsp://0.0.0.0:{port}/live", "srt://127.0.0.1:{port}", "udp://127.0.0.1:{port}",
])
def test_stream_urls_to_loopback_are_refused_before_any_connection(ctx, port_watch: PortWatch, template: str):
    url = template.format(port=port_watch.port)
    with pytest.raises(MediaError, match="local/private address") as err:
        resolve_video(url, ctx)
    assert "pw" not in str(err.value) and "CAMERAS.md" in str(err.value)
    assert port_watch.accepted == 0


@pytest.mark.parametrize("url", [
    "rtsp://10.0.0.9/live", "rtsp://192.168.1.20:554/s", "rtmp://172.16.0.1/app", "rtsp://169.254.169.254/",
    "http://169.254.169.254/latest/meta-data", "rtsp://[fe80::1]/live", "rtsp://100.64.0.1/cgnat",
    "rtsp://224.0.0.1/multicast",
])
def test_private_link_local_and_multicast_stream_urls_are_refused(ctx, url: str):
    with pytest.raises(MediaError, match="local/private"):
        resolve_video(url, ctx)


def test_a_camera_opens_its_own_scheme_host_and_port_only(ctx, workspace_dir: Path, port_watch: PortWatch,
                                                          other_port_watch: PortWatch):
    cam = f"rtsp://admin:pw@127.0.0.1:{port_watch.port}/live"
    register_cameras(workspace_dir, door=cam)
    assert resolve_video("door", ctx) == cam
    assert resolve_video(f"rtsp://127.0.0.1:{port_watch.port}/other-path", ctx).endswith("/other-path")
    for url in (f"rtsp://127.0.0.1:{other_port_watch.port}/live",  # another port of the camera's host
                f"http://127.0.0.1:{port_watch.port}/live",  # the camera's port, another scheme
                "rtsp://127.0.0.1/live"):  # the default port, which the camera did not register
        with pytest.raises(MediaError, match="local/private"):
            resolve_video(url, ctx)
    with pytest.raises(MediaError, match="local/private"):
        resolve_image(f"http://127.0.0.1:{other_port_watch.port}/snap.jpg", ctx)
    assert other_port_watch.accepted == 0 and port_watch.accepted == 0  # resolving never connects


def test_the_inference_server_opens_its_port_only(base_env, port_watch: PortWatch, other_port_watch: PortWatch):
    settings = load_settings({**base_env, "INFERENCE_SERVER_URL": f"http://127.0.0.1:{port_watch.port}"})
    ctx = ToolContext(settings=settings)
    with pytest.raises(MediaError, match="local/private"):
        resolve_video(f"rtsp://127.0.0.1:{port_watch.port}/live", ctx)  # same port, another scheme
    with pytest.raises(MediaError, match="local/private"):
        resolve_image(f"http://127.0.0.1:{other_port_watch.port}/x.jpg", ctx)
    assert other_port_watch.accepted == 0


def test_redirect_into_the_lan_is_rechecked_and_refused(base_env, workspace_dir: Path, image_server: str,
                                                        port_watch: PortWatch):
    register_cameras(workspace_dir, bouncer=f"{image_server}/")  # the first hop is allowed
    ctx = ToolContext(settings=load_settings(base_env))
    for target in (f"http://127.0.0.1:{port_watch.port}/x.png", "http://169.254.169.254/latest/meta-data"):
        with pytest.raises(MediaError, match="local/private"):
            resolve_image(f"{image_server}/redirect?to={target}", ctx)
    assert port_watch.accepted == 0


@pytest.fixture
def rebinding_dns(monkeypatch, port_watch: PortWatch):
    """rebind.test answers a public address the first time and 127.0.0.1 afterwards (a DNS rebinding attack)."""
    real = socket.getaddrinfo
    answers: list[str] = []

    def fake(host, port, *args, **kwargs):
        if host != "rebind.test":
            return real(host, port, *args, **kwargs)
        ip = PUBLIC if not answers else "127.0.0.1"
        answers.append(ip)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port or 0))]

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    return answers


def test_dns_rebinding_cannot_move_an_http_fetch_to_loopback(base_env, rebinding_dns, port_watch: PortWatch):
    ctx = ToolContext(settings=load_settings(base_env, inference={"request_timeout": 3}))
    with pytest.raises(MediaError, match="could not fetch"):
        resolve_image(f"http://rebind.test:{port_watch.port}/x.png", ctx)  # connects to the checked public IP
    assert rebinding_dns == [PUBLIC] and port_watch.accepted == 0  # resolved once; loopback never reached


def test_dns_rebinding_cannot_move_a_stream_to_loopback(ctx, rebinding_dns, port_watch: PortWatch):
    source = resolve_video(f"rtsp://user:pw@rebind.test:{port_watch.port}/live", ctx)
    assert source == f"rtsp://user:pw@{PUBLIC}:{port_watch.port}/live"  # OpenCV is handed the checked address
    assert rebinding_dns == [PUBLIC]


def test_a_name_with_one_private_address_among_public_ones_is_refused(ctx, monkeypatch):
    real = socket.getaddrinfo

    def fake(host, port, *args, **kwargs):
        if host != "mixed.test":
            return real(host, port, *args, **kwargs)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port)) for ip in (PUBLIC, "10.0.0.1")]

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    with pytest.raises(MediaError, match="local/private"):
        resolve_video("rtsp://mixed.test/live", ctx)


def test_origin_and_host_substitution():
    assert origin("RTSP://Cam.Local/live") == "rtsp://cam.local:554"
    assert origin("http://u:p@10.0.0.1:8080/x") == "http://10.0.0.1:8080"
    assert origin("rtsp:///nohost") is None
    assert with_host("rtsp://u:p@cam:8554/s?x=1", "1.2.3.4") == "rtsp://u:p@1.2.3.4:8554/s?x=1"
    assert with_host("rtsp://cam/s", "2001:db8::1") == "rtsp://[2001:db8::1]/s"


@pytest.fixture
def public_site(monkeypatch):
    """A web server that looks public: public.test resolves to PUBLIC, and the (simulated) network routes PUBLIC to
    a server on 127.0.0.1 — the checks see a public address; only the route is faked, not the rule."""
    pages: dict[str, tuple[int, dict[str, str], bytes]] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server naming
            status, headers, body = pages.get(self.path, (404, {}, b""))
            self.send_response(status)
            for k, v in {**headers, "Content-Length": str(len(body))}.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    real_resolve, real_connect = socket.getaddrinfo, socket.create_connection

    def resolve(host, port, *args, **kwargs):
        if host == "public.test":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (PUBLIC, port))]
        return real_resolve(host, port, *args, **kwargs)

    def connect(address, *args, **kwargs):
        host, port = address
        return real_connect(("127.0.0.1", port) if host == PUBLIC else address, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    monkeypatch.setattr(socket, "create_connection", connect)
    yield f"http://public.test:{server.server_port}", pages
    server.shutdown()
    server.server_close()
    thread.join(5)


def test_an_http_video_source_is_looked_at_before_the_video_reader_gets_it(ctx, public_site, port_watch: PortWatch):
    from tests.handlers.transport.test_files import jpeg

    base, pages = public_site
    port = base.rsplit(":", 1)[1]
    pages["/bounce"] = (302, {"Location": f"http://127.0.0.1:{port_watch.port}/admin"}, b"")
    pages["/live"] = (200, {"Content-Type": "application/vnd.apple.mpegurl"}, b"#EXTM3U\n#EXT-X-VERSION:3\n")
    pages["/snapshot.cgi"] = (200, {"Content-Type": "image/jpeg"}, jpeg())
    pages["/moved"] = (301, {"Location": "/clip"}, b"")
    pages["/clip"] = (200, {"Content-Type": "video/mp4"}, b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 64)
    with pytest.raises(MediaError, match="local/private"):
        resolve_video(f"{base}/bounce", ctx)  # FFmpeg would have followed this into the LAN
    assert port_watch.accepted == 0
    with pytest.raises(MediaError, match="HLS playlist"):
        resolve_video(f"{base}/live", ctx)
    with pytest.raises(MediaError, match="still image"):
        resolve_video(f"{base}/snapshot.cgi", ctx)
    assert resolve_video(f"{base}/moved", ctx) == f"http://{PUBLIC}:{port}/clip"  # final URL, checked address
