"""The Java images' pattern, on a throwaway module: Maven runs once in the build stage on the
build machine's platform (FROM --platform=$BUILDPLATFORM, the maven role), against the parent
images/pom.xml, and the jar is copied into the jvm image of every target platform, where it runs
(arm/v7 under QEMU). This is what images/jmh, moobench and jpa-rest build on."""

from __future__ import annotations

import re

import pytest

from pirex import proc
from pirex.images import bake, builder, localregistry, publish, regclient
from pirex.images.platforms import host, parse
from pirex.paths import REPO

pytestmark = pytest.mark.docker


def dockerfile() -> str:
    """The real build stage of images/jmh/Dockerfile, for module hello, plus a final stage."""
    text = (REPO / "images" / "jmh" / "Dockerfile").read_text()
    build_stage = text[text.index("ARG MAVEN_IMAGE") : text.index("# `jvm` is a named build context")]
    assert "--platform=$BUILDPLATFORM" in build_stage
    return build_stage.replace("jmh", "hello") + (
        "FROM jvm\n"
        "COPY --from=build /src/hello/target/hello.jar /opt/pirex/hello.jar\n"
        'CMD ["java", "-cp", "/opt/pirex/hello.jar", "Hello"]\n'
    )


MODULE_POM = """\
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <parent>
    <groupId>io.github.pirex-bench</groupId>
    <artifactId>pirex-images</artifactId>
    <version>0.1.0</version>
  </parent>
  <artifactId>hello</artifactId>
  <build><finalName>hello</finalName></build>
</project>
"""

JAVA = """\
public class Hello {
    public static void main(String[] args) {
        System.out.println(System.getProperty("os.arch") + " " + System.getProperty("java.vm.name"));
    }
}
"""


def test_jar_built_once_runs_on_every_platform(built, infra, tmp_path):
    ctx = tmp_path / "ctx"
    (ctx / "hello" / "src" / "main" / "java").mkdir(parents=True)
    pom = (REPO / "images" / "pom.xml").read_text()
    (ctx / "pom.xml").write_text(
        re.sub(r"<modules>.*</modules>", "<modules><module>hello</module></modules>", pom, flags=re.S)
    )
    (ctx / "hello" / "pom.xml").write_text(MODULE_POM)
    (ctx / "hello" / "src" / "main" / "java" / "Hello.java").write_text(JAVA)
    (ctx / "Dockerfile").write_text(dockerfile())

    maven = built.bases.get("MAVEN_IMAGE") or bake.variable_default("MAVEN_IMAGE")
    targets = [parse("linux/arm/v7"), host()]
    tag = f"{localregistry.HOST}/pirex-test/hello:{built.tag}"
    _, builder_name = infra
    builder.buildx(
        "build", "--builder", builder_name, "--platform", ",".join(map(str, targets)), "--push", "--provenance=false",
        "--build-arg", f"MAVEN_IMAGE={maven}",
        "--build-context", f"jvm=docker-image://{publish.local_ref('jvm', built.tag)}",
        "--build-context", f"extra-ca={bake.extra_ca_dir()}",
        "-t", tag, str(ctx), timeout=1800, what="building the Java pattern",
    )  # fmt: skip
    reg = regclient.Registry(localregistry.HOST)
    _, images = reg.platform_images("pirex-test/hello", built.tag)
    assert set(images) == set(targets)
    for p in targets:
        ref = f"{localregistry.HOST}/pirex-test/hello@{images[p].manifest_digest}"
        proc.run(["docker", "pull", "-q", ref], timeout=600)
        out = proc.run(["docker", "run", "--rm", "--platform", str(p), ref], timeout=300).stdout.split()
        assert out[0] == p.java_os_arch
