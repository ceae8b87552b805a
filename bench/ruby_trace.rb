# frozen_string_literal: true

# The Ruby reference's tracer (bench/_dynamic_reference.py), preloaded with ``ruby -r``: every
# call of a method defined under PATCHSTREAM_TRACE_ROOT made from a line under it, as
# (call site, the method's def; ``initialize`` for a ``new``), the method each one overrides
# at the top, and the lines that ran. Written as JSON to PATCHSTREAM_TRACE_OUT at exit.
require "coverage"
require "json"

root = File.expand_path(ENV.fetch("PATCHSTREAM_TRACE_ROOT")) + "/"
out = ENV.fetch("PATCHSTREAM_TRACE_OUT")
calls = {}
roots = {} # "path:line" of a method -> [path, line] of the first method above it it overrides
seen = {}
Coverage.start(lines: true)

# The topmost method of the corpus that ``owner#name`` overrides (``super_method`` to the end).
root_of = lambda do |owner, name|
  method = owner.instance_method(name)
  top = method
  16.times do
    above = top.super_method
    break unless above&.source_location && above.source_location[0].start_with?(root)

    top = above
  end
  top == method ? nil : top.source_location
rescue StandardError
  nil
end

trace = TracePoint.new(:call) do |tp|
  next unless tp.path.start_with?(root)

  # [0] is the method itself, [1] where it was called (``Foo.new``'s line for ``initialize``)
  site = caller_locations(2, 1)&.first
  next unless site&.path&.start_with?(root)

  calls[[site.path, site.lineno, tp.path, tp.lineno]] = true
  key = "#{tp.path}:#{tp.lineno}"
  unless seen.key?(key)
    seen[key] = true
    top = root_of.call(tp.defined_class, tp.method_id)
    roots[key] = top if top
  end
end
trace.enable

at_exit do # registered first, so it runs last: after minitest's and test-unit's own at_exit
  trace.disable
  lines = Coverage.result.select { |path, _| path.start_with?(root) }
  ran = lines.transform_values do |cover|
    (cover.is_a?(Hash) ? cover[:lines] : cover).each_with_index.filter_map { |n, i| i + 1 if n&.positive? }
  end
  File.write(out, JSON.generate({ "root" => root, "calls" => calls.keys, "lines" => ran,
                                  "roots" => roots }))
end
