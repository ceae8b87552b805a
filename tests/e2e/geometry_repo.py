"""Twenty files a new user tried context on: shapes, their helpers, tests and a README."""

from textwrap import dedent

GEOMETRY = {
    "geometry/__init__.py": dedent("""\
        from geometry.square import Square
        from geometry.circle import Circle
    """),
    "geometry/base.py": dedent('''\
        class Shape:
            """A plane figure."""

            def area(self) -> float:
                raise NotImplementedError

            def perimeter(self) -> float:
                raise NotImplementedError

            def describe(self) -> str:
                return f"{type(self).__name__} with area {self.area():.2f}"
    '''),
    "geometry/square.py": dedent('''\
        from geometry.base import Shape


        class Square(Shape):
            """A square with equal sides."""

            def __init__(self, side: float) -> None:
                self.side = side

            def area(self) -> float:
                return self.side * self.side

            def perimeter(self) -> float:
                return 4 * self.side
    '''),
    "geometry/circle.py": dedent("""\
        import math

        from geometry.base import Shape


        class Circle(Shape):
            def __init__(self, radius: float) -> None:
                self.radius = radius

            def area(self) -> float:
                return math.pi * self.radius ** 2

            def perimeter(self) -> float:
                return 2 * math.pi * self.radius
    """),
    "geometry/rectangle.py": dedent("""\
        from geometry.base import Shape


        class Rectangle(Shape):
            def __init__(self, width: float, height: float) -> None:
                self.width = width
                self.height = height

            def area(self) -> float:
                return self.width * self.height

            def perimeter(self) -> float:
                return 2 * (self.width + self.height)
    """),
    "geometry/triangle.py": dedent("""\
        import math

        from geometry.base import Shape


        class Triangle(Shape):
            def __init__(self, a: float, b: float, c: float) -> None:
                self.a, self.b, self.c = a, b, c

            def area(self) -> float:
                s = self.perimeter() / 2
                return math.sqrt(s * (s - self.a) * (s - self.b) * (s - self.c))

            def perimeter(self) -> float:
                return self.a + self.b + self.c
    """),
    "geometry/registry.py": dedent("""\
        from geometry.circle import Circle
        from geometry.square import Square

        SHAPES = {"square": Square, "circle": Circle}


        def make(kind: str, *args: float):
            return SHAPES[kind](*args)
    """),
    "geometry/units.py": dedent("""\
        def to_metres(value: float, unit: str) -> float:
            return value * {"m": 1.0, "cm": 0.01, "mm": 0.001}[unit]
    """),
    "geometry/render.py": dedent("""\
        from geometry.base import Shape


        def render(shape: Shape) -> str:
            return f"<{shape.describe()}>"
    """),
    "geometry/cli.py": dedent("""\
        import sys

        from geometry.registry import make


        def main() -> None:
            shape = make(sys.argv[1], *map(float, sys.argv[2:]))
            print(shape.area())
    """),
    "geometry/io.py": dedent("""\
        import json


        def load(path: str) -> list[dict]:
            with open(path) as f:
                return json.load(f)
    """),
    "geometry/total.py": dedent("""\
        from geometry.registry import make


        def total_area(specs: list[tuple]) -> float:
            return sum(make(kind, *args).area() for kind, *args in specs)
    """),
    "geometry/compare.py": dedent("""\
        def larger(a, b):
            return a if a.area() >= b.area() else b
    """),
    "geometry/scale.py": dedent("""\
        from geometry.square import Square


        def scaled(square: Square, factor: float) -> Square:
            return Square(square.side * factor)
    """),
    "geometry/validate.py": dedent("""\
        def positive(value: float) -> float:
            if value <= 0:
                raise ValueError('must be positive')
            return value
    """),
    "tests/test_square.py": dedent("""\
        from geometry.square import Square


        def test_area():
            assert Square(3).area() == 9


        def test_perimeter():
            assert Square(3).perimeter() == 12
    """),
    "tests/test_circle.py": dedent("""\
        from geometry.circle import Circle


        def test_area():
            assert round(Circle(1).area(), 2) == 3.14
    """),
    "tests/test_total.py": dedent("""\
        from geometry.total import total_area


        def test_total():
            assert total_area([("square", 2)]) == 4
    """),
    "README.md": dedent("""\
        # geometry

        Areas and perimeters of plane shapes: squares, circles, rectangles, triangles.

        ## Usage

        ```
        python -m geometry.cli square 3
        ```
    """),
    "setup.py": dedent("""\
        from setuptools import setup

        setup(name='geometry', packages=['geometry'])
    """),
}
