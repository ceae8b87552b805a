<?php
// Where functions are defined, by reflection, with the corpus's autoloader
// (bench/_dynamic_reference.py). Reads {"traced": [names Xdebug wrote: ``A\B->m``,
// ``A\B::m``, ``A\f``], "classes": [``A\B``, ...]} on stdin; writes {"traced": [[file, first
// line] or null, in order], "roots": {"file:line": [file, line]}}: for every method of every
// class listed, the declaration it overrides or implements, followed to the first one (an
// interface's, or the topmost base's), where a call through a declared type is bound.
require getenv('PATCHSTREAM_TRACE_AUTOLOAD');
$asked = json_decode(stream_get_contents(STDIN), true);
$where = fn ($reflected) => $reflected->getFileName() === false
    ? null : [$reflected->getFileName(), $reflected->getStartLine()];
$traced = [];
foreach ($asked['traced'] as $name) {
    try {
        if (preg_match('/^([\w\\\\]+)(?:->|::)(\w+)$/', $name, $m)) {
            $traced[] = $where(new ReflectionMethod($m[1], $m[2]));
        } elseif (preg_match('/^[\w\\\\]+$/', $name)) {
            $traced[] = $where(new ReflectionFunction($name));
        } else {
            $traced[] = null;
        }
    } catch (Throwable $error) {
        $traced[] = null;
    }
}
$roots = [];
foreach ($asked['classes'] as $class) {
    try {
        $methods = (new ReflectionClass($class))->getMethods();
    } catch (Throwable $error) {
        continue;
    }
    foreach ($methods as $method) {
        $root = $method;
        for ($depth = 0; $depth < 16; $depth++) {
            try {
                $root = $root->getPrototype();
            } catch (ReflectionException $none) {
                break;
            }
        }
        $at = $where($method);
        $top = $where($root);
        if ($at !== null && $top !== null && $at !== $top) {
            $roots["{$at[0]}:{$at[1]}"] = $top;
        }
    }
}
echo json_encode(['traced' => $traced, 'roots' => (object) $roots]);
