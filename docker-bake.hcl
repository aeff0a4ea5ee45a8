# The build graph of pirex: one target per image, all platforms in one invocation.
#   docker buildx bake --print          shows the resolved graph
#   make build [PLATFORMS=...] [OFFLINE=1]   builds it (through `pirex images build`)
# A new image plugs in with one target: its context, the image it builds on (as a named
# context, so that `FROM jvm` always means this repository's jvm image) and its tag.
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

function "tags" {
  params = [name]
  result = ["${REGISTRY}/${name}:${TAG}"]
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
  args     = { DEBIAN_IMAGE = DEBIAN_IMAGE }
  tags     = tags("base")
}

target "jvm" {
  inherits = ["_common"]
  context  = "images/jvm"
  contexts = { base = "target:base" }
  args     = { JDK_IMAGE = JDK_IMAGE }
  tags     = tags("jvm")
}

# Java images build from images/ (the Maven parent is there) on the build platform.
target "jmh" {
  inherits   = ["_common"]
  context    = "images"
  dockerfile = "jmh/Dockerfile"
  contexts   = { jvm = "target:jvm", extra-ca = EXTRA_CA_DIR }
  args       = { MAVEN_IMAGE = MAVEN_IMAGE }
  tags       = tags("jmh")
}

target "moobench" {
  inherits   = ["_common"]
  context    = "images"
  dockerfile = "moobench/Dockerfile"
  contexts   = { jvm = "target:jvm", extra-ca = EXTRA_CA_DIR }
  args       = { MAVEN_IMAGE = MAVEN_IMAGE }
  tags       = tags("moobench")
}

target "jpa-rest" {
  inherits   = ["_common"]
  context    = "images"
  dockerfile = "jpa-rest/Dockerfile"
  contexts   = { jvm = "target:jvm", extra-ca = EXTRA_CA_DIR }
  args       = { MAVEN_IMAGE = MAVEN_IMAGE }
  tags       = tags("jpa-rest")
}

# Debian's PostgreSQL on base: the same database bits online and offline.
target "postgres" {
  inherits = ["_common"]
  context  = "images/postgres"
  contexts = { base = "target:base" }
  tags     = tags("postgres")
}

# Locust's gevent has no armv7 wheels: arm/v7 takes Debian's python3-locust (images/locust).
target "locust" {
  inherits   = ["_common"]
  context    = "images"
  dockerfile = "locust/Dockerfile"
  contexts   = { base = "target:base", extra-ca = EXTRA_CA_DIR }
  tags       = tags("locust")
}

# C images build from images/ and cross-compile on the build platform.
target "fork" {
  inherits   = ["_common"]
  context    = "images"
  dockerfile = "fork/Dockerfile"
  contexts   = { base = "target:base" }
  args       = { DEBIAN_IMAGE = DEBIAN_IMAGE }
  tags       = tags("fork")
}
