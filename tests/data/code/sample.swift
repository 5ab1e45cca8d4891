import Foundation

/// A shape with an area.
protocol Shape {
    func area() -> Double
}

/// A circle { not a brace }.
struct Circle: Shape {
    let radius: Double

    /// Its area.
    func area() -> Double {
        return .pi * radius * radius
    }
}

final class Canvas {
    private var shapes: [Shape] = []

    init() {}

    /// Adds a shape.
    func add(
        _ shape: Shape,
        at index: Int
    ) {
        shapes.insert(shape, at: index)
    }
}

extension Circle {
    func diameter() -> Double { radius * 2 }
}

enum Direction {
    case north, south
}

func helper(_ x: Int) -> Int {
    return x * 2
}
