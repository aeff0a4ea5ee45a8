# The build graph of pirex, and the one place it is written: one target per image, all platforms
# in one invocation. `pirex images build|list|push`, the image tests (tests/test_images.py) and
# the release workflow (.github/workflows/release.yml) all read it.
#   docker buildx bake --print          shows the resolved graph
#   make build [PLATFORMS=...] [OFFLINE=1]   builds it (through `pirex images build`)
# A new image plugs in with one target and its name in the group "default": its context, the
# image it builds on (as a named context, so that `FROM jvm` always means this repository's jvm
# image) and its tags. Images are the folders images/<name>/ with a top-level Dockerfile;
# shared build stages (images/stages/) are targets outside the group, never tagged or pushed.
# Every base is a variable: online the pinned public images below, offline the bootstrap roles
# in the local registry (images/bootstrap), set by pirex through the environment.

variable "REGISTRY" {
  default = "localhost:5000/pirex"
}
variable "TAG" {
  default = "dev"
}
variable "VERSION" {
  default = "dev"
}
variable "REVISION" {
  default = "unknown"
}
variable "SOURCE" {
  default = "https://github.com/pirex-bench/pirex"
}
variable "PLATFORMS" {
  default = "linux/amd64,linux/arm64,linux/arm/v7"
}
# Pinned public bases. Temurin 17 is the last Temurin with linux/arm/v7 images.
variable "DEBIAN_IMAGE" {
  default = "debian:bookworm-20260803-slim@sha256:abd67ffcfa541b485a3dff59865ab629aa048a6c613e639d36e7456b0b229241"
}
variable "JDK_IMAGE" {
  default = "eclipse-temurin:17.0.19_10-jre-noble@sha256:3b76e760cfe4096739b754800e09449b900f40bab4c81859bb02fa37c0b15827"
}
variable "MAVEN_IMAGE" {
  default = "maven:3.9.16-eclipse-temurin-17-noble@sha256:b1420375ab2a5f3ef6e0f355367bff4096e23bdea2191af2b95f9f1c71984690"
}

# Certificate authorities Maven must trust in the Java build stages (TLS-inspecting proxies);
# see images/extra-ca/README.md. Never part of an image.
variable "EXTRA_CA_DIR" {
  default = "images/extra-ca"
}

# The tags an image gets: REGISTRY/<name>:TAG locally. The release workflow adds
# docker/metadata-action's bake file, which redefines this target's tags with the release's
# (1.2.3, 1.2, sha-...).
target "docker-metadata-action" {
  tags = [TAG]
}

function "tags" {
  params = [name, versions]
  result = [for v in versions : "${REGISTRY}/${name}:${v}"]
}

group "default" {
  targets = ["base", "jvm", "jmh", "moobench", "jpa-rest", "postgres", "locust", "fork"]
}

target "_common" {
  platforms = split(",", PLATFORMS)
  args = {
    VERSION  = VERSION
    REVISION = REVISION
    SOURCE   = SOURCE
  }
}

target "base" {
  inherits = ["_common"]
  context  = "images/base"
  contexts = { debs = "target:debs" }
  args     = { DEBIAN_IMAGE = DEBIAN_IMAGE }
  tags     = tags("base", target.docker-metadata-action.tags)
}

target "jvm" {
  inherits = ["_common"]
  context  = "images/jvm"
  contexts = { base = "target:base" }
  args     = { JDK_IMAGE = JDK_IMAGE }
  tags     = tags("jvm", target.docker-metadata-action.tags)
}

# The shared stage that chooses and downloads Debian packages on the build machine for any platform
# (images/stages/debs): the images install them without apt's update and solver under QEMU.
target "debs" {
  context = "images/stages/debs"
  args    = { DEBIAN_IMAGE = DEBIAN_IMAGE }
}

# The Java images' shared build stage (images/stages/java-build): Maven on the build machine's
# platform (no platforms here: the builder's own), never an image.
target "java-build" {
  context    = "images"
  dockerfile = "stages/java-build/Dockerfile"
  contexts   = { extra-ca = EXTRA_CA_DIR }
  args       = { MAVEN_IMAGE = MAVEN_IMAGE }
}

# Java images build from images/ on java-build and copy their jars into jvm.
target "_java" {
  inherits = ["_common"]
  context  = "images"
  contexts = { jvm = "target:jvm", java-build = "target:java-build" }
}

target "jmh" {
  inherits   = ["_java"]
  dockerfile = "jmh/Dockerfile"
  tags       = tags("jmh", target.docker-metadata-action.tags)
}

target "moobench" {
  inherits   = ["_java"]
  dockerfile = "moobench/Dockerfile"
  tags       = tags("moobench", target.docker-metadata-action.tags)
}

target "jpa-rest" {
  inherits   = ["_java"]
  dockerfile = "jpa-rest/Dockerfile"
  contexts   = { debs = "target:debs" } # added to _java's: bake merges an inherited map
  tags       = tags("jpa-rest", target.docker-metadata-action.tags)
}

# Debian's PostgreSQL on base: the same database bits online and offline.
target "postgres" {
  inherits = ["_common"]
  context  = "images/postgres"
  contexts = { base = "target:base", debs = "target:debs" }
  tags     = tags("postgres", target.docker-metadata-action.tags)
}

# Locust's gevent has no armv7 wheels: arm/v7 takes Debian's python3-locust (images/locust).
target "locust" {
  inherits   = ["_common"]
  context    = "images"
  dockerfile = "locust/Dockerfile"
  contexts   = { base = "target:base", extra-ca = EXTRA_CA_DIR, debs = "target:debs" }
  tags       = tags("locust", target.docker-metadata-action.tags)
}

# C images build from images/ and cross-compile on the build platform.
target "fork" {
  inherits   = ["_common"]
  context    = "images"
  dockerfile = "fork/Dockerfile"
  contexts   = { base = "target:base" }
  args       = { DEBIAN_IMAGE = DEBIAN_IMAGE }
  tags       = tags("fork", target.docker-metadata-action.tags)
}
