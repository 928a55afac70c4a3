"""Object transfers against a real S3 API (moto's server, the real boto3 client making the grants):
a presigned PUT and GET for single objects, a presigned POST policy for a write namespace."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from agentenv_protocol.transfers import (
    HttpGetGrant,
    HttpPostPolicyGrant,
    HttpPutGrant,
    NamespaceUploader,
    ReadObject,
    TransferError,
    WriteNamespaceGrant,
    WriteObject,
    download,
    upload,
)

pytestmark = pytest.mark.anyio


def _later() -> datetime:
    return datetime.now(UTC) + timedelta(minutes=5)


def namespace_grant(s3, root: str, **limits: int) -> WriteNamespaceGrant:
    post = s3.client.generate_presigned_post(s3.bucket, root + "/${filename}", ExpiresIn=300)
    fields = {k: v for k, v in post["fields"].items() if k != "key"}
    return WriteNamespaceGrant(
        root_path=root,
        expires_at=_later(),
        max_objects=limits.get("max_objects", 2),
        max_object_bytes=limits.get("max_object_bytes", 64),
        max_total_bytes=limits.get("max_total_bytes", 100),
        write=HttpPostPolicyGrant(
            kind="http-post-policy",
            url=post["url"],
            fields=fields,
            path_field="key",
            file_field="file",
        ),
    )


async def test_an_object_goes_up_and_comes_back_verified(s3, tmp_path):
    body = b"x" * 200_000
    put = s3.client.generate_presigned_url(
        "put_object", Params={"Bucket": s3.bucket, "Key": "one.bin"}, ExpiresIn=300
    )
    uploaded = await upload(
        WriteObject(
            media_type="application/octet-stream",
            max_bytes=len(body),
            write=HttpPutGrant(kind="http-put", url=put, expires_at=_later()),
        ),
        body,
    )
    assert uploaded.sha256 == hashlib.sha256(body).hexdigest()
    assert s3.client.get_object(Bucket=s3.bucket, Key="one.bin")["Body"].read() == body

    get = s3.client.generate_presigned_url(
        "get_object", Params={"Bucket": s3.bucket, "Key": "one.bin"}, ExpiresIn=300
    )
    grant = HttpGetGrant(kind="http-get", url=get, expires_at=_later())
    out = await download(
        ReadObject(
            media_type="application/octet-stream",
            max_bytes=len(body),
            size_bytes=len(body),
            sha256=uploaded.sha256,
            read=grant,
        ),
        tmp_path / "out.bin",
    )
    assert out.read_bytes() == body
    wrong = ReadObject(
        media_type="application/octet-stream", max_bytes=len(body), sha256="0" * 64, read=grant
    )
    with pytest.raises(TransferError, match="sha256"):
        await download(wrong, tmp_path / "bad.bin")
    assert not (tmp_path / "bad.bin").exists()


async def test_a_namespace_uploads_under_its_root_and_keeps_its_limits(s3):
    uploader = NamespaceUploader(
        namespace_grant(s3, "runs/limits", max_objects=2, max_total_bytes=100)
    )
    await uploader.upload("a/first.txt", b"1" * 60)
    with pytest.raises(TransferError, match="namespace total is 120 bytes, over its limit of 100"):
        await uploader.upload("second.txt", b"2" * 60)
    await uploader.upload("second.txt", b"2" * 40)
    with pytest.raises(TransferError, match="allows 2 object"):
        await uploader.upload("third.txt", b"3")
    keys = [
        o["Key"]
        for o in s3.client.list_objects_v2(Bucket=s3.bucket, Prefix="runs/limits/")["Contents"]
    ]
    assert sorted(keys) == ["runs/limits/a/first.txt", "runs/limits/second.txt"]
    assert (
        s3.client.get_object(Bucket=s3.bucket, Key="runs/limits/a/first.txt")["Body"].read()
        == b"1" * 60
    )


async def test_nothing_is_sent_for_a_bad_path_an_oversized_object_or_an_expired_grant(s3):
    grant = namespace_grant(s3, "runs/r2", max_object_bytes=4)
    uploader = NamespaceUploader(grant)
    with pytest.raises(ValueError, match="not a normalized relative path"):
        await uploader.upload("../escape", b"x")
    with pytest.raises(TransferError, match="over its limit of 4"):
        await uploader.upload("big", b"12345")
    expired = NamespaceUploader(grant.model_copy(update={"expires_at": datetime.now(UTC)}))
    with pytest.raises(TransferError, match="expired"):
        await expired.upload("late", b"x")
    assert "Contents" not in s3.client.list_objects_v2(Bucket=s3.bucket, Prefix="runs/r2/")


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("https://objects.example.test/u", True),
        ("http://127.0.0.1:9000/u", True),
        ("http://localhost/u", True),
        ("http://objects.example.test/u", False),
        ("ftp://127.0.0.1/u", False),
    ],
)
def test_grant_urls_are_https_or_loopback(url, ok):
    make = lambda: HttpPutGrant(kind="http-put", url=url, expires_at=_later())  # noqa: E731
    if ok:
        assert make().url == url
    else:
        with pytest.raises(ValidationError, match="must use https"):
            make()


def test_a_grant_hides_its_credentials_in_repr_and_refuses_unknown_keys():
    grant = _namespace_offline()
    assert "signature-secret" not in repr(grant)
    with pytest.raises(ValidationError, match="extra"):
        WriteNamespaceGrant.model_validate({**grant.model_dump(), "colour": "red"})
    with pytest.raises(ValidationError, match="root_path"):
        WriteNamespaceGrant.model_validate({**grant.model_dump(), "root_path": "a/../b"})


def _namespace_offline() -> WriteNamespaceGrant:
    return WriteNamespaceGrant(
        root_path="r",
        expires_at=_later(),
        max_objects=1,
        max_object_bytes=1,
        max_total_bytes=1,
        write=HttpPostPolicyGrant(
            kind="http-post-policy",
            url="https://objects.example.test/u",
            fields={"policy": "signature-secret"},
            path_field="key",
            file_field="file",
        ),
    )
