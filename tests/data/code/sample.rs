use std::fmt;

/// A point in the plane.
#[derive(Debug, Clone)]
pub struct Point {
    x: i32,
    y: i32,
}

impl Point {
    /// Makes a new point.
    pub fn new(x: i32, y: i32) -> Self {
        Point { x, y }
    }

    /// Distance from the origin.
    pub fn norm(&self) -> f64 {
        ((self.x * self.x + self.y * self.y) as f64).sqrt()
    }
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "({}, {})", self.x, self.y)
    }
}

/// Something with an area.
pub trait Shape {
    fn area(&self) -> f64;
}

pub enum Kind {
    Circle,
    Square,
}

macro_rules! square {
    ($x:expr) => {
        $x * $x
    };
}

pub async fn run<'a>(p: &'a Point) {
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_works() {
        assert_eq!(Point::new(1, 2).x, 1);
    }
}
