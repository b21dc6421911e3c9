"""Checks that a line's jar links against other pyspark releases of that line: every class, method
and field of Spark (and of the libraries pyspark ships) that the compiled classes reference must
exist, declared or inherited, in the release's jars. A patch release can drop or change one (a
backport that removes a trait, a new default argument); the JVM would then fail only when a
query reaches the call, with NoSuchMethodError or NoClassDefFoundError.

    scripts/sbt spark41/compile
    python3 scripts/spark_links.py 4.1 4.1.0 4.1.4

Prints what each release lacks and exits with 1 if any lacks something. Reads the references
from the class files' constant pools and the releases' members with javap.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from spark_jars import ROOT, jars_of, spark_lines

OURS = ("io/github/sparkmultijoin/", "org/apache/spark/sql/multijoin/")
JDK = ("java/", "javax/", "jdk/", "sun/")
MEMBER_REF = re.compile(r"= (?:Methodref|InterfaceMethodref|Fieldref)\s+#\d+\.#\d+\s+// (.+)$")
CLASS_REF = re.compile(r"= Class\s+#\d+\s+// (.+)$")
CLASS_HEADER = re.compile(r"^[a-z ]*(?:class|interface) ([\w.$]+)(.*)\{$")

Member = tuple[str, str, str]  # owner class, name, descriptor


def external(name: str) -> bool:
    return not name.startswith(OURS + JDK) and "[" not in name


def references(classes: Path) -> tuple[set[str], set[Member]]:
    """The external classes and members that the class files under `classes` refer to."""
    files = [str(path) for path in classes.rglob("*.class")]
    listing = subprocess.run(["javap", "-v", *files], capture_output=True, text=True, check=True)
    owners: set[str] = set()
    members: set[Member] = set()
    for line in listing.stdout.splitlines():
        if match := MEMBER_REF.search(line):
            owner_and_name, descriptor = match.group(1).split(":", 1)
            owner, name = owner_and_name.rsplit(".", 1)
            owner = owner.strip('"')
            if external(owner):
                members.add((owner, name.strip('"'), descriptor))
                owners.add(owner)
        elif (match := CLASS_REF.search(line)) and external(name := match.group(1).strip('" ')):
            owners.add(name)
    return owners, members


def without_type_arguments(text: str) -> str:
    depth, kept = 0, []
    for char in text:
        depth += (char == "<") - (char == ">")
        if depth == 0 and char != ">":
            kept.append(char)
    return "".join(kept)


def supertypes(name: str, header_rest: str) -> list[str]:
    """The direct supertypes a javap class header names (java.lang.Object if it names none)."""
    found = []
    for keyword in ("extends", "implements"):
        if match := re.search(keyword + r" ([\w.$, ]+?)(?: implements|$)", header_rest.strip()):
            found += [part.strip().replace(".", "/") for part in match.group(1).split(",")]
    if "extends " not in header_rest and name != "java/lang/Object":
        found.append("java/lang/Object")
    return found


def member_name(declaration: str, owner: str) -> str:
    """The JVM name of the member a javap line declares (<init> for a constructor)."""
    if declaration == "static {}":
        return "<clinit>"
    if "(" in declaration:
        name = declaration[:declaration.index("(")].split()[-1]
        return "<init>" if name.replace(".", "/") == owner else name
    return declaration.split()[-1]


class Release:
    """The classes of a release's jars, as javap lists them, loaded when first asked about."""

    def __init__(self, jars: Path) -> None:
        self.classpath = ":".join(str(jar) for jar in sorted(jars.glob("*.jar")))
        self.classes: dict[str, tuple[list[str], set[tuple[str, str]]] | None] = {}

    def load(self, names: list[str]) -> None:
        names = [name for name in dict.fromkeys(names) if name not in self.classes]
        for name in names:
            self.classes[name] = None  # unless javap finds it
        for start in range(0, len(names), 200):
            batch = [name.replace("/", ".") for name in names[start:start + 200]]
            listing = subprocess.run(["javap", "-p", "-s", "-cp", self.classpath, *batch],
                                     capture_output=True, text=True)
            self.parse(listing.stdout)

    def parse(self, listing: str) -> None:
        owner, pending = None, None
        for line in listing.splitlines():
            text = line.strip()
            header = CLASS_HEADER.match(without_type_arguments(line))
            if header and not line.startswith(" "):
                owner = header.group(1).replace(".", "/")
                self.classes[owner] = (supertypes(owner, header.group(2)), set())
            elif owner and text.startswith("descriptor:") and pending is not None:
                self.classes[owner][1].add((pending, text.split(":", 1)[1].strip()))
                pending = None
            elif owner and re.match(r"  \S", line) and text.endswith(";"):
                pending = member_name(without_type_arguments(text[:-1]), owner)

    def has(self, owner: str, name: str, descriptor: str) -> bool:
        """Whether `owner` declares or inherits the member (constructors are not inherited)."""
        self.load([owner])
        if (entry := self.classes[owner]) is None:
            return False
        parents, members = entry
        if (name, descriptor) in members:
            return True
        if name == "<init>":
            return False
        self.load(parents)
        return any(self.has(parent, name, descriptor) for parent in parents)


def lacking(classes: Path, jars: Path) -> list[str]:
    """What the classes under `classes` refer to that the jars in `jars` lack."""
    owners, members = references(classes)
    release = Release(jars)
    release.load(sorted(owners))
    missing = [f"class {owner}" for owner in sorted(owners) if release.classes[owner] is None]
    missing += [f"member {owner}.{name}:{descriptor}"
                for owner, name, descriptor in sorted(members)
                if release.classes[owner] is not None and not release.has(owner, name, descriptor)]
    return missing


def main() -> None:
    line, releases = sys.argv[1], sys.argv[2:]
    if line not in spark_lines() or not releases:
        raise SystemExit(f"usage: spark_links.py LINE RELEASE... ({', '.join(spark_lines())})")
    classes = ROOT / "target" / f"spark-{line}" / "target" / "scala-2.13" / "classes"
    if not classes.is_dir():
        project = "spark" + line.replace(".", "")
        raise SystemExit(f"no classes of line {line}: run scripts/sbt {project}/compile")
    failed = False
    for release in releases:
        missing = lacking(classes, jars_of(release))
        print(f"pyspark {release}: " + ("links" if not missing else f"lacks {len(missing)}:"))
        print("".join(f"  {item}\n" for item in missing), end="")
        failed |= bool(missing)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
