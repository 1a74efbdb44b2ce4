// Lays out a graph with dagre (web/vendor, docs/adr/0230) off the page's thread, so a graph of
// thousands of nodes never blocks the page. In: {id, nodes: [{id, width, height}], edges:
// [{from, to}], options}; out: {id, width, height, ms, nodes: [{id, x, y}] (centres), edges:
// [{from, to, points}]}.
"use strict";
importScripts("vendor/dagre.min.js");

onmessage = (ev) => {
  const { id, nodes, edges, options } = ev.data;
  const started = performance.now();
  const g = new dagre.graphlib.Graph();
  g.setGraph(Object.assign({ rankdir: "LR", nodesep: 16, ranksep: 56, edgesep: 8, marginx: 16, marginy: 16 }, options || {}));
  g.setDefaultEdgeLabel(() => ({}));
  for (const n of nodes) g.setNode(n.id, { width: n.width, height: n.height });
  for (const e of edges) {
    if (e.from !== e.to && g.hasNode(e.from) && g.hasNode(e.to)) g.setEdge(e.from, e.to);
  }
  dagre.layout(g);
  postMessage({
    id,
    width: g.graph().width,
    height: g.graph().height,
    ms: performance.now() - started,
    nodes: g.nodes().map((v) => ({ id: v, x: g.node(v).x, y: g.node(v).y })),
    edges: g.edges().map((e) => ({ from: e.v, to: e.w, points: g.edge(e).points })),
  });
};
