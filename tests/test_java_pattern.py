"""The Java images' pattern, on a throwaway module: Maven runs once in the shared build stage
java-build (images/stages/java-build: the maven role on the build machine's platform, the parent
images/pom.xml), built through docker-bake.hcl's own target, and the jar is copied into the jvm
image of every target platform, where it runs (arm/v7 under QEMU). This is what images/jmh,
moobench and jpa-rest build on."""

from __future__ import annotations

import pytest

from pirex.core import proc
from pirex.core.paths import REPO
from pirex.images import bake, localregistry, publish, regclient
from pirex.images.platforms import host, parse

pytestmark = pytest.mark.docker


def dockerfile() -> str:
    """The real build stage of images/jmh/Dockerfile, for module hello, plus a final stage."""
    text = (REPO / "images" / "jmh" / "Dockerfile").read_text()
    build_stage = text[text.index("FROM --platform=$BUILDPLATFORM java-build") : text.index("# `jvm` is a named")]
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

# The module as one more target beside docker-bake.hcl's, on its java-build stage.
HELLO_BAKE = """\
variable "HELLO_DIR" {}
variable "HELLO_TAG" {}
variable "JVM_IMAGE" {}
target "hello" {
  context   = HELLO_DIR
  contexts  = { java-build = "target:java-build", jvm = "docker-image://${JVM_IMAGE}" }
  platforms = split(",", PLATFORMS)
  tags      = [HELLO_TAG]
}
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
    (ctx / "hello" / "pom.xml").write_text(MODULE_POM)
    (ctx / "hello" / "src" / "main" / "java" / "Hello.java").write_text(JAVA)
    (ctx / "Dockerfile").write_text(dockerfile())

    (tmp_path / "hello.hcl").write_text(HELLO_BAKE)
    targets = [parse("linux/arm/v7"), host()]
    tag = f"{localregistry.HOST}/pirex-test/hello:{built.tag}"
    _, builder_name = infra
    variables = bake.bake_vars(
        registry=f"{localregistry.HOST}/pirex-test",
        tag=built.tag,
        platforms=targets,
        version="test",
        revision="test",
        bases=built.bases,
    )
    variables |= {"HELLO_DIR": str(ctx), "HELLO_TAG": tag, "JVM_IMAGE": publish.local_ref("jvm", built.tag)}
    bake.build(builder_name, variables, ["hello"], files=(bake.BAKE_FILE, tmp_path / "hello.hcl"))
    reg = regclient.Registry(localregistry.HOST)
    _, images = reg.platform_images("pirex-test/hello", built.tag)
    assert set(images) == set(targets)
    for p in targets:
        ref = f"{localregistry.HOST}/pirex-test/hello@{images[p].manifest_digest}"
        proc.run(["docker", "pull", "-q", ref], timeout=600)
        out = proc.run(["docker", "run", "--rm", "--platform", str(p), ref], timeout=300).stdout.split()
        assert out[0] == p.java_os_arch
